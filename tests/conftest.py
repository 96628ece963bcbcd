"""Shared fixtures: each test gets its own CROFT_HOME and job label, and can lay out a project in tmp_path."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from croft.history.db import open_history

MakeProject = Callable[..., Path]


@pytest.fixture(autouse=True)
def _croft_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test may touch the user's ~/.croft or real OS job: point both somewhere private."""
    home = tmp_path_factory.mktemp("croft-home")
    monkeypatch.setenv("CROFT_HOME", str(home))
    monkeypatch.setenv("CROFT_JOB_LABEL", "dev.croft.test")
    monkeypatch.setenv("CROFT_NOTIFY_DRY", "1")  # no test pops up a real desktop notification by accident
    # the reader's zone (core.when): the zone make_project gives a project by default, so a screen reads
    # in the project's own zone unless a test moves the reader elsewhere
    monkeypatch.setenv("TZ", "Europe/London")
    return home


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A project's history (runs.sqlite, migrated) in a fresh state folder."""
    connection = open_history(tmp_path / "state")
    yield connection
    connection.close()


@pytest.fixture
def make_project(tmp_path: Path) -> MakeProject:
    """``make_project({"assets/orders.sql": "...", ...}, timezone="Europe/London", **config) -> root``.

    Files are dedented; ``config`` adds croft.json keys; ``root`` picks a folder (default: tmp_path/"proj").
    """

    def make(
        files: dict[str, str] | None = None,
        *,
        timezone: str | None = "Europe/London",
        root: Path | None = None,
        **config: Any,
    ) -> Path:
        folder = root or tmp_path / "proj"
        folder.mkdir(parents=True, exist_ok=True)
        data = ({"timezone": timezone} if timezone is not None else {}) | config
        (folder / "croft.json").write_text(json.dumps(data, indent=2) + "\n")
        (folder / "assets").mkdir(exist_ok=True)
        for rel, text in (files or {}).items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
        return folder

    return make


@pytest.fixture
def server() -> Iterator[Any]:
    """A local HTTP server (tests/httpserver.py) that fails the test if a handler raised."""
    from httpserver import serve

    with serve() as running:
        yield running
        assert running.errors == []


@pytest.fixture
def session_bus(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A real D-Bus session bus with a listener for desktop notifications (tests/dbuskit.py): (the runtime
    folder holding its socket, the file each Notify call is written to)."""
    from dbuskit import running_bus

    with running_bus(tmp_path) as bus:
        yield bus
