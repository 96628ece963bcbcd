"""What status, schedule status and the tick read from runs.sqlite does not grow with the history.

Counted, not timed: every SQLite connection croft opens gets a progress handler that counts the
virtual machine's steps, and the same commands over the same project are compared with 60 old runs
and with 3,000 more. A query that reads the whole history (a GROUP BY over every step, a TOTAL over
every row) costs 50 times more steps in the larger history; an index probe costs the same.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from enginekit import croft

from croft.core import sqlitefile
from croft.core.clock import parse_instant
from croft.history.db import open_history
from croft.project.config import load_project

NOW = "2026-06-01T10:00:00Z"
SMALL, LARGE = 60, 3_000

INGEST = """
from croft import ingest


@ingest(schedule="daily at 03:00", key="id")
def rows(ctx):
    yield [{"id": 1}]
"""


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """[steps so far]: every connection made through core.sqlitefile counts its VM steps here."""
    total = [0]
    real = sqlitefile.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real(*args, **kwargs)

        def tick() -> int:
            total[0] += 1
            return 0

        conn.set_progress_handler(tick, 1)
        return conn

    monkeypatch.setattr(sqlitefile, "connect", connect)
    yield total


def _old_runs(state: Path, n: int) -> None:
    """``n`` finished scheduled runs (an ingest step and a transform step each) in the weeks before."""
    conn = open_history(state)
    try:
        conn.execute("BEGIN")
        for i in range(n):
            at = f"2026-05-{1 + i * 28 // n:02d}T{i % 24:02d}:00:00.{i % 1000:03d}Z"
            run = f"r_old_{i:06d}"
            conn.execute(
                "INSERT INTO runs (id, trigger, human, argv, started_at, finished_at, status, summary)"
                " VALUES (?, 'schedule', 0, '[]', ?, ?, ?, '{}')",
                (run, at, at, "failed" if i % 7 == 0 else "succeeded"),
            )
            for asset, status in (("feed", "failed" if i % 7 == 0 else "ok"), ("report", "unchanged")):
                conn.execute(
                    "INSERT INTO steps (run_id, asset, attempt, status, started_at, finished_at)"
                    " VALUES (?, ?, 1, ?, ?, ?)",
                    (run, asset, status, at, at),
                )
        conn.execute("COMMIT")
    finally:
        conn.close()


def _project(make_project: Callable[..., Path], tmp_path: Path, name: str, old: int) -> Path:
    root = make_project(
        {"assets/feed.py": INGEST, "assets/report.sql": "-- key: id\nSELECT id FROM feed\n"},
        root=tmp_path / name,
        timezone="UTC",
    )
    _old_runs(root / ".croft", old)
    code, envelope = croft(root, "run", env={"CROFT_NOW": "2026-06-01T09:30:00Z"})
    assert code == 0, envelope
    code, envelope = croft(root, "schedule", "on", "--no-os-job", env={"CROFT_NOW": "2026-06-01T09:31:00Z"})
    assert code == 0, envelope
    return root


def _reads(root: Path, counted: list[int], monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The VM steps of each reader, in-process, at NOW (nothing is due: the run covered today's fire)."""
    from croft.engine.status import project_status
    from croft.history.prune import kept_runs
    from croft.scheduler.tick.memo import MEMO_KEY, memo_holds
    from croft.scheduler.tick.project_tick import project_tick
    from croft.scheduler.tick.view import schedule_view

    monkeypatch.setenv("CROFT_NOW", NOW)
    project = load_project(root)
    now = parse_instant(NOW)
    out: dict[str, int] = {}

    def measure(name: str, call: Callable[[], Any]) -> Any:
        before = counted[0]
        value = call()
        out[name] = counted[0] - before
        return value

    conn = open_history(root / ".croft")
    try:
        conn.execute("DELETE FROM settings WHERE key = ?", (MEMO_KEY,))
    finally:
        conn.close()
    data, _ = measure("full tick", lambda: project_tick(project, now))
    assert data["spawned"] == [] and data["held"] == [], data
    assert measure("idle check", lambda: memo_holds(str(root), NOW)) is not None
    measure("status", lambda: project_status(project))
    measure("schedule view", lambda: schedule_view(project, now))
    conn = open_history(root / ".croft")
    try:
        conn.set_progress_handler(lambda: counted.__setitem__(0, counted[0] + 1) or 0, 1)  # type: ignore[func-returns-value]
        kept = measure("prune's kept runs", lambda: kept_runs(conn))
        assert kept  # the latest runs of both assets are kept
    finally:
        conn.close()
    return out


def test_status_and_the_tick_read_as_much_at_3000_runs_as_at_60(
    make_project: Callable[..., Path], tmp_path: Path, counted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _reads(_project(make_project, tmp_path, "small", SMALL), counted, monkeypatch)
    large = _reads(_project(make_project, tmp_path, "large", LARGE), counted, monkeypatch)
    grown = {name: (small[name], large[name]) for name in small if large[name] > small[name] * 1.05 + 50}
    assert grown == {}, (
        f"reads that grew with the history (steps at {SMALL} and {LARGE + SMALL} runs): {grown}"
    )
