"""Under ``umask 000`` croft's own folders still come out 0700 and its files 0600: the state folder (step
logs, process logs, the notification record, runs.sqlite with its -wal and -shm) and CROFT_HOME (the
registry, slots, caches, the tick log). Real croft processes, the umask set for each one.

The warehouse is the user's data, not croft's state, so it is not checked here (SQLite makes it 0644).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from schedulekit import env_at, wait_for_runs

from croft.core.clock import parse_instant
from croft.history.db import open_history
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user.registry import Registry

NOW = "2026-06-01T10:05:00Z"
FEED = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    ctx.log("a line for the step log")
    print("and one printed")
    yield [{"id": 1}]
"""
BROKEN = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def broken(ctx):
    import os

    if os.environ.get("CROFT_TEST_BREAK"):
        raise RuntimeError("scheduled failure")
    yield [{"id": 1}]
"""


def croft(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "croft", *args],
        cwd=root,
        env=env_at(NOW, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(0),  # the umask of the croft process only
    )
    return done


def modes(folder: Path) -> dict[str, int]:
    """Every folder and file under ``folder`` (itself included), by relative path: its permission bits."""
    out = {".": stat.S_IMODE(folder.lstat().st_mode)}
    for path in folder.rglob("*"):
        out[str(path.relative_to(folder))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def test_croft_keeps_its_own_files_private_whatever_the_umask(make_project, _croft_home: Path) -> None:
    os.rmdir(_croft_home)  # made by the suite; croft makes it here, under umask 000
    root = make_project({"assets/feed.py": FEED, "assets/broken.py": BROKEN})
    assert croft(root, "run", "--json").returncode == 0
    assert croft(root, "schedule", "on", "--no-os-job", "--json").returncode == 0
    Registry().add(root, "os-job", parse_instant(NOW))  # so `tick --all` below ticks it too
    tick = croft(root, "tick", "--json", CROFT_NOW="2026-06-01T11:00:30Z", CROFT_TEST_BREAK="1")
    assert tick.returncode == 0, tick.stdout + tick.stderr
    wait_for_runs(root)
    conn = open_history(root / ".croft")  # ticked by the OS job from here on (no real one installed):
    write_scheduling(conn, "on", parse_instant(NOW), via="os-job")  # tick --all gives it a full tick by
    conn.close()  # a worker, which the tick log records
    assert croft(root, "tick", "--all", CROFT_NOW="2026-06-01T11:01:30Z").returncode == 0
    wait_for_runs(root)
    assert croft(root, "status", "--json").returncode == 0

    state = modes(root / ".croft")
    assert {"runs.sqlite", "logs", "logs/notifications.ndjson"} <= set(state)
    # a step's log is a file only while it runs (a row of runs.sqlite once it ended), and a scheduled run
    # that reported itself leaves no process folder: what is left here is runs.sqlite and the logs above
    assert any(p.startswith("runs.sqlite-") for p in state)  # its -wal / -shm (WAL mode)
    home = modes(_croft_home)
    assert {"projects.json", "slots.sqlite", "logs", "logs/tick.log"} <= set(home)
    for where, found in (("state folder", state), ("CROFT_HOME", home)):
        base = root / ".croft" if where == "state folder" else _croft_home
        wrong = {
            path: oct(bits)
            for path, bits in found.items()
            if bits != (0o700 if (base / path).is_dir() else 0o600)
        }
        assert wrong == {}, f"in the {where}, not 0700/0600 under umask 000: {wrong}"
