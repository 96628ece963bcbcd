"""A walk over every state file croft keeps (docs/design.md, "Never silent" lists them): for each, garbage and
a 0-byte file, then the next minute of the OS job (`croft tick --all`, real processes, on a moved clock).
No command ends in a traceback or an INTERNAL_ERROR, every non-zero exit says why (brokenkit.croft), and
no command claims health: the file is rebuilt (and the views say no more than before the damage), or
the views name a problem they did not name before.

The world: two projects, A and B, ticked through the OS job's command (`croft tick --all`; no job is
installed, so doctor's OS-job line is broken before and after alike), each with an hourly ingest that is
due at every step of the clock.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from brokenkit import croft
from schedulekit import ISSUES, wait_for_runs
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.core.problems import problem
from croft.history.db import open_history
from croft.scheduler import incidents
from croft.scheduler.heartbeat import last_heartbeat, write_user_beats
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.wakefile import read_state

T0, T1 = "2026-06-01T10:05:00Z", "2026-06-01T11:05:00Z"
LOOK0, LOOK1 = "2026-06-01T10:06:00Z", "2026-06-01T11:06:00Z"


@dataclass(frozen=True)
class World:
    home: Path
    a: Path
    b: Path


@dataclass(frozen=True)
class StateFile:
    """One state file: where it is, and how croft answers its damage: ``rebuilt`` (a check that it is
    whole again after the next minute) or ``reported`` (the problem codes a view must newly name)."""

    name: str
    path: Callable[[World], Path]
    rebuilt: Callable[[World], bool] | None = None
    reported: frozenset[str] = frozenset()


def _database(path: Path, table: str) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute("PRAGMA quick_check").fetchone()[0] == "ok" and bool(
                conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            )
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def _registry_whole(w: World) -> bool:
    fresh = Registry(w.home)
    return {e.root for e in fresh.entries()} == {str(w.a.resolve()), str(w.b.resolve())} and not fresh.notes


def _backup_whole(w: World) -> bool:
    croft(w.a, "doctor", CROFT_NOW=LOOK1)  # doctor rewrites a copy that is missing or out of date
    fresh = Registry(w.home)
    return fresh.backup() == fresh.entries()


STATE_FILES = [
    # per user (CROFT_HOME)
    StateFile("projects.json", lambda w: w.home / "projects.json", rebuilt=_registry_whole),
    StateFile("projects.json.bak", lambda w: w.home / "projects.json.bak", rebuilt=_backup_whole),
    StateFile("projects.json.lock", lambda w: w.home / "projects.json.lock", rebuilt=lambda w: True),
    StateFile(
        "slots.sqlite",
        lambda w: w.home / "slots.sqlite",
        rebuilt=lambda w: _database(w.home / "slots.sqlite", "slots"),
    ),
    StateFile("slots.sqlite.lock", lambda w: w.home / "slots.sqlite.lock", rebuilt=lambda w: True),
    StateFile("wake", lambda w: w.home / "wake", rebuilt=lambda w: bool(read_state(str(w.home)))),
    StateFile("idle-beats.json", lambda w: w.home / "idle-beats.json", rebuilt=lambda w: True),
    StateFile("tick-all.lock", lambda w: w.home / "tick-all.lock", rebuilt=lambda w: True),
    StateFile("config.json", lambda w: w.home / "config.json", reported=frozenset({"CONFIG_INVALID"})),
    StateFile(
        "incidents/<project>.json",
        lambda w: Path(incidents.incident_path(str(w.a.resolve()), w.home)),
        rebuilt=lambda w: incidents.read(str(w.a.resolve()), w.home) is None,  # the good tick cleared it
    ),
    StateFile("logs/tick.log", lambda w: w.home / "logs" / "tick.log", rebuilt=lambda w: True),
    # per project (its state folder)
    StateFile(
        "runs.sqlite",
        lambda w: w.a / ".croft" / "runs.sqlite",
        reported=frozenset(
            {"HISTORY_CORRUPT", "SCHEDULER_BROKEN"}
        ),  # garbage: corrupt; 0 bytes: setting lost
    ),
    # a step's log is a row of runs.sqlite once its attempt ended (history.steplogs): the runs.sqlite entry
    StateFile("notify.log", lambda w: w.a / ".croft" / "logs" / "notify.log", rebuilt=lambda w: True),
    StateFile(
        "process.log of a scheduled run",
        lambda w: next((w.a / ".croft" / "logs").glob("r_*/process.log")),
        rebuilt=lambda w: True,
    ),
]


@pytest.fixture
def world(make_project, _croft_home: Path, tmp_path: Path) -> World:
    def one(name: str) -> Path:
        root = make_project(
            {"assets/issues.py": ISSUES.format(schedule="every hour")},
            root=tmp_path / name,
        )
        assert croft(root, "run", CROFT_NOW="2026-06-01T09:30:00Z")[0] == 0  # approved by a person
        conn = open_history(root / ".croft")
        write_scheduling(conn, "on", parse_instant("2026-06-01T09:30:00Z"), via="os-job")
        conn.close()
        Registry(_croft_home).add(root, "os-job", parse_instant("2026-06-01T09:30:00Z"))
        return root

    w = World(_croft_home, one("a"), one("b"))
    (_croft_home / "config.json").write_text('{"maxScheduledRuns": 4}')
    _minute(w, T0)
    # the files only some minutes make, made as those minutes would
    incidents.record(str(w.a.resolve()), _a_problem(), parse_instant(T0), "tick", w.home)
    (w.a / ".croft" / "logs" / "notify.log").write_text("2026-06-01T10:05:00.000Z - a line\n")
    write_user_beats(str(_croft_home), "2026-06-01T10:05:00.000Z", [str(w.a.resolve())])  # the user's minute
    (_croft_home / "slots.sqlite.lock").touch()  # taken when a broken slots file is rebuilt
    return w


def _a_problem() -> Any:
    return problem("DB_BUSY", "an earlier tick met a busy history", "it goes by itself")


def _minute(w: World, at: str) -> None:
    """One minute of the OS job: tick --all, the project ticks it starts, and the runs they start."""
    _code, envelope = croft(w.a, "tick", "--all", CROFT_NOW=at)
    for started in envelope["data"]["started"]:
        root, pid = Path(started["root"]), started["pid"]
        wait_for(lambda r=root: _ticked(r, at), f"{root}'s tick at {at}")
        wait_for(lambda p=pid: not _running(p), f"the tick of {root} (pid {pid}) to end")
        wait_for_runs(root)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie: init reaps the ticks tick --all leaves)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _ticked(root: Path, at: str) -> bool:
    return (last_heartbeat(root / ".croft", parse_instant(at)) or "") >= at[:16]


def _codes(w: World, at: str) -> dict[str, set[tuple[str, str | None]]]:
    """What each view names: (code, cause) pairs, so a new cause under a code named before still counts."""
    seen = {
        "status": croft(w.a, "status", CROFT_NOW=at),
        "schedule status": croft(w.a, "schedule", "status", CROFT_NOW=at),
        "doctor": croft(w.a, "doctor", CROFT_NOW=at),
    }
    return {
        name: {(p["code"], (p.get("details") or {}).get("cause")) for p in envelope["problems"]}
        for name, (_code, envelope) in seen.items()
    }


@pytest.mark.parametrize("damage", ["garbage", "empty"])
@pytest.mark.parametrize("state", STATE_FILES, ids=lambda s: s.name)
def test_no_command_claims_health_over_a_damaged_state_file(world: World, state: StateFile, damage: str):
    before = _codes(world, LOOK0)
    path = state.path(world)
    assert path.exists(), f"the walk's world has no {path}"
    path.write_bytes(os.urandom(2048) if damage == "garbage" else b"")
    _minute(world, T1)
    after = _codes(world, LOOK1)
    new = {name: codes - before[name] for name, codes in after.items()}
    if state.rebuilt is not None:
        assert state.rebuilt(world), f"{state.name} was not rebuilt"
        assert not any(new.values()), f"{state.name} rebuilt, yet the views name new problems: {new}"
    else:
        named = {code for code, _cause in set().union(*new.values())}
        assert named & state.reported, f"{state.name} ({damage}): no view names it; they said {after}"
