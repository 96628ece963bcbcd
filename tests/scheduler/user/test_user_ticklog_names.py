"""Every tick.log line about a project names it, so the lines of projects ticking in the same minute read
apart: real ``croft tick --all`` (its output appended to the log as the OS job appends it) starting real
project ticks that start real runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from schedulekit import ISSUES, croft_json, env_at, wait_for_runs
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.history.db import open_history
from croft.scheduler.setting import write_scheduling
from croft.scheduler.ticklog import NamedLines, project_names
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (.+?): (.*)$")


def test_names_are_the_folders_unless_two_share_one() -> None:
    names = project_names(["/a/shop", "/b/shop/", "/c/crm", "/"])
    assert names == {"/a/shop": "/a/shop", "/b/shop/": "/b/shop/", "/c/crm": "crm", "/": "/"}
    assert project_names(["/x/shop"]) == {"/x/shop": "shop"}


def test_named_lines_writes_whole_lines_with_their_stamp_and_name(tmp_path: Path) -> None:
    path = tmp_path / "tick.log"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    stamps = iter(["T1", "T2", "T3"])
    out = NamedLines(fd, "shop", lambda: next(stamps))
    out.write("tick: started r_1 (items)")  # no newline yet: nothing written
    assert path.read_text() == ""
    out.write(" (3 ms)\n  held x\nhalf")
    assert path.read_text() == "T1 shop: tick: started r_1 (items) (3 ms)\nT1 shop:   held x\n"
    out.flush()  # the end of a line the process never finished is still a line of its own
    out.write("\n")
    assert path.read_text().splitlines()[2:] == ["T2 shop: half", "T3 shop: "]

    def broken() -> str:
        raise ValueError("CROFT_NOW is not a time")

    NamedLines(fd, "shop", broken).write("told anyway\n")  # a clock that fails never loses the line
    assert path.read_text().splitlines()[-1] == "- shop: told anyway"
    os.close(fd)


def test_a_project_tick_with_log_as_names_every_line_it_prints_a_traceback_too(tmp_path: Path) -> None:
    """Through the real stdout and stderr of a process: what croft prints and what Python prints."""
    log = tmp_path / "tick.log"
    script = (
        "import sys\n"
        "from croft.cli.tick import _log_as\n"
        "_log_as('my shop')\n"
        "print('tick: nothing due (1 ms)')\n"
        "raise RuntimeError('boom')\n"
    )
    with open(log, "ab") as out:
        done = subprocess.run(
            [sys.executable, "-c", script], stdout=out, stderr=subprocess.STDOUT, check=False
        )
    assert done.returncode == 1
    lines = log.read_text().splitlines()
    assert lines[0].endswith(" my shop: tick: nothing due (1 ms)")
    assert lines[-1].endswith(" my shop: RuntimeError: boom") and "Traceback" in lines[1]
    assert all(LINE.match(line) and LINE.match(line).group(1) == "my shop" for line in lines)  # type: ignore[union-attr]

    bad = tmp_path / "bad.log"  # a usage error is told in named lines too
    with open(bad, "ab") as out:
        subprocess.run(
            [sys.executable, "-m", "croft", "tick", "--log-as", "shop", "--bogus"],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    said = bad.read_text().splitlines()
    assert said and all(LINE.match(line).group(1) == "shop" for line in said), said  # type: ignore[union-attr]
    assert any("USAGE" in line and "--bogus" in line for line in said), said


def _project(base: Path, rel: str, make_project: Any) -> Path:
    root = make_project({"assets/items.py": ISSUES.format(schedule="every 5 minutes")}, root=base / rel)
    code, env = croft_json(root, "2026-12-01T08:00:00Z", "run")  # by hand first: new code is held until then
    assert code == 0, env
    return root


def test_two_projects_ticking_in_the_same_minute_read_apart(
    tmp_path: Path, make_project: Any, _croft_home: Path
) -> None:
    roots = [_project(tmp_path, rel, make_project) for rel in ("a/shop", "b/shop", "crm")]
    registry = Registry()
    for root in roots:  # on, ticked by the OS job's tick --all (none is installed: the test runs it)
        conn = open_history(root / ".croft")
        write_scheduling(conn, "on", parse_instant("2026-12-01T08:00:00Z"), via="os-job")
        conn.close()
        registry.add(root, "os-job", parse_instant("2026-12-01T08:00:00Z"))
    log = _croft_home / "logs" / "tick.log"
    log.parent.mkdir(mode=0o700, exist_ok=True)
    with open(log, "ab") as out:  # as the OS job runs it: its output appended to the tick log
        done = subprocess.run(
            [sys.executable, "-m", "croft", "tick", "--all"],
            env=env_at("2026-12-01T08:05:30Z"),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0
    names = {str(roots[0]): str(roots[0]), str(roots[1]): str(roots[1]), str(roots[2]): "crm"}

    def all_told() -> list[str]:
        lines = log.read_text().splitlines()
        return lines if sum(": tick: " in line for line in lines) == 3 else []

    lines = wait_for(all_told, lambda: "three project ticks to say what they did: " + log.read_text())
    for root in roots:
        wait_for_runs(root)
    for line in lines:
        found = LINE.match(line)
        assert found and found.group(1) in names.values(), (
            f"a line naming no project: {line!r}\n{log.read_text()}"
        )
    for root in roots:
        name = names[str(root)]
        own = [LINE.match(line).group(2) for line in lines if LINE.match(line).group(1) == name]  # type: ignore[union-attr]
        assert any(text.startswith("tick started (pid ") for text in own), own  # tick --all's line
        assert any(text.startswith("tick: ") for text in own), own  # its own tick's words
    # two started a run each (the per-user cap is 2), the third held it saying why: each under its name
    said = [LINE.match(line).group(1) for line in lines if " tick: started r_" in line]  # type: ignore[union-attr]
    held = [LINE.match(line).group(1) for line in lines if "held items (ASSET_BUSY)" in line]  # type: ignore[union-attr]
    assert len(said) == 2 and len(held) == 1 and sorted(said + held) == sorted(names.values())


def _named_tick(root: Path, log: Path, now: str, *args: str) -> str:
    """``croft tick --log-as shop ARGS`` at ``now``, its output appended to ``log`` as the per-user tick
    appends it; the one line it wrote."""
    before = log.read_text().splitlines() if log.exists() else []
    with open(log, "ab") as out:
        subprocess.run(
            [sys.executable, "-m", "croft", "tick", "--log-as", "shop", *args],
            cwd=root,
            env=env_at(now),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=120,
        )
    lines = log.read_text().splitlines()
    assert lines[: len(before)] == before and len(lines) == len(before) + 1, lines
    return lines[-1]


def test_an_idle_tick_started_with_log_as_names_its_line(tmp_path: Path, make_project: Any) -> None:
    """The per-user tick starts every project tick with --log-as: its idle path names every line it prints."""
    root = _project(tmp_path, "shop", make_project)
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", parse_instant("2026-12-01T08:00:00Z"), via="os-job")
    conn.close()
    code, env = croft_json(root, "2026-12-01T08:01:00Z", "tick")  # nothing due: leaves the idle memo
    assert code == 0 and env["data"]["path"] == "full" and not env["data"]["spawned"], env
    log = tmp_path / "tick.log"
    # the idle path (as its data says) prints the envelope as one line naming the project
    line = _named_tick(root, log, "2026-12-01T08:02:00Z", "--json")
    stamp, _, said = line.partition(" shop: ")
    assert stamp == "2026-12-01T08:02:00.000Z" and json.loads(said)["data"]["path"] == "idle", line
    # and its words likewise, nothing having changed since
    line = _named_tick(root, log, "2026-12-01T08:03:00Z")
    assert re.fullmatch(r"2026-12-01T08:03:00\.000Z shop: tick: nothing due \(\d+ ms\)", line), line
