"""A week of seeded faults on a moved clock: croft's promise, checked whole.

An hourly ingest is ticked by the per-user tick (``croft tick --all``, the OS job's command, as real
processes at ``CROFT_NOW``) through a week of a laptop's life: wake periods of ticks a few minutes apart,
sleeps of hours between them, and one fault at a time drawn by a seeded random generator: a tick killed
mid-minute, a scheduled run killed, garbage in a state file of croft's home, a code edit (held until a
person runs it), the clock set back by hours, ``croft.json`` away for a minute, a 0-byte ``runs.sqlite``
(put back by the person, as HISTORY_LOST's hint says) and, as root, a full disk.

Each fault must be reported to the person when it happens (a problem in the envelope, a notification or
a line in the tick log). At the end: no traceback anywhere; every run that succeeded left its row (no row
lost); no hourly fire ran twice; and every hour in which a healthy tick came had its fire handled, by a
scheduled run or by a person's run. A few minutes of wall time.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from brokenkit import fill, small_disk
from schedulekit import env_at, setting, wait_for_runs
from waiting import wait_for

from croft.core.clock import parse_instant, to_iso
from croft.history.db import open_history
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user.registry import Registry

SEED = int(os.environ.get("CROFT_SOAK_SEED", "20261202"))
START = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
WEEK = timedelta(days=7)
INGEST = """
import os
import time

from croft import ingest


@ingest(schedule="every hour", write="append")
def rows(ctx):
    hang = os.environ.get("CROFT_TEST_HANG")
    waited = 0.0
    while hang and os.path.exists(hang) and waited < 60:
        time.sleep(0.05)
        waited += 0.05
    yield [{"id": os.environ.get("CROFT_NOW", "?"), "n": 1}]
"""
FAULTS = ("kill-tick", "kill-run", "garbage", "edit", "clock-back", "gone", "zero-history", "full-disk")
RESUMES = ("clock-back", "gone", "zero-history", "full-disk", "kill-run")  # checked to tick on at once
HOME_FILES = ("wake", "slots.sqlite", "idle-beats.json")


class Week:
    """The soak's world: the project, croft's home, the clock, and what was said and done."""

    def __init__(self, root: Path, home: Path, tmp: Path, disk: Path | None):
        self.root, self.home, self.tmp, self.disk = root, home, tmp, disk
        self.now = START
        self.outputs: list[str] = []  # every stderr croft printed
        self.healthy: list[datetime] = []  # ticks with no fault active
        self.reported: dict[str, int] = {}
        self.edits = 0
        self.excused: set[datetime] = set()  # hours a reported fault may have cost their fire
        self.ahead_at: set[str] = set()  # the clocks set ahead: their runs are the clock-back fault's

    def at(self) -> str:
        return to_iso(self.now)

    def croft(self, *args: str, **extra: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run(
            [sys.executable, "-m", "croft", *args, "--json"],
            cwd=self.root if (self.root / "croft.json").exists() else self.tmp,
            env=env_at(self.at(), CROFT_HOME=str(self.home), CROFT_TEST_HANG=str(self.tmp / "hang"), **extra),
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.outputs.append(done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, json.loads(done.stdout)

    def tick(self, *, healthy: bool = True) -> dict[str, Any]:
        code, envelope = self.croft("tick", "--all")
        for p in envelope["problems"]:
            self.reported[p["code"]] = self.reported.get(p["code"], 0) + 1
        if healthy and code == 0:
            self.healthy.append(self.now)
        with contextlib.suppress(FileNotFoundError, sqlite3.OperationalError):  # a history away: no runs
            wait_for_runs(self.root)
        return envelope

    def told(self, code: str) -> int:
        """How many times ``code`` was told: notifications of the project, and the tick log's lines."""
        count = 0
        log = self.root / ".croft" / "logs" / "notifications.ndjson"
        if log.exists():
            count += sum(1 for line in log.read_text(errors="replace").splitlines() if code in line)
        tick_log = self.home / "logs" / "tick.log"
        if tick_log.exists():
            count += tick_log.read_text(errors="replace").count(code)
        return count + self.reported.get(code, 0)

    def advance(self, delta: timedelta) -> None:
        self.now += delta


def _rows(root: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{root / 'warehouse.sqlite'}?mode=ro", uri=True)
    try:
        return [str(r[0]) for r in conn.execute("SELECT id FROM rows")]
    finally:
        conn.close()


def _runs(root: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{root / '.croft' / 'runs.sqlite'}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT id, trigger, status, started_at FROM runs")]
    finally:
        conn.close()


@contextlib.contextmanager
def _place(tmp_path: Path) -> Iterator[Path | None]:
    """The project's disk: a small tmpfs as root (so the full-disk fault can run), else none."""
    if os.geteuid() == 0:
        with small_disk(tmp_path / "disk", "24m") as disk:
            yield disk
    else:
        yield None


def _hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def _fault(week: Week, kind: str) -> None:
    """Inject one fault, check the person is told, then undo it (as the person or the world would). The
    hours it touches are excused from "every hour with a tick had its fire run": it was reported."""
    begun = week.now
    try:
        _inject(week, kind)
    finally:
        end = week.now
        week.excused.update({_hour(begun), _hour(end), _hour(end + timedelta(minutes=20))})
    if kind in RESUMES:
        # the fault is over: the next fire by the clock runs, an hour the end check does not excuse
        week.now = _hour(end) + timedelta(hours=1, minutes=2)
        week.tick()


def _inject(week: Week, kind: str) -> None:
    root = week.root
    if kind == "kill-tick":
        lock = week.home / "tick-all.lock"
        before = lock.stat().st_mtime_ns if lock.exists() else 0
        proc = subprocess.Popen(
            [sys.executable, "-m", "croft", "tick", "--all", "--json"],
            cwd=root,
            env=env_at(week.at(), CROFT_HOME=str(week.home)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(
            lambda: proc.poll() is not None or (lock.exists() and lock.stat().st_mtime_ns != before),
            "the tick to take its minute",
        )
        proc.kill()
        proc.wait()
        with contextlib.suppress(FileNotFoundError):
            wait_for_runs(root)
        return  # a tick killed is the OS job's next minute's work: nothing to tell
    if kind == "kill-run":
        hang = week.tmp / "hang"
        hang.touch()
        week.advance(timedelta(hours=1))  # the next fire is due
        code, envelope = week.croft("tick", "--all")
        notes = wait_for(lambda: setting(root, "schedule.spawned"), "a scheduled run to be spawned")
        pid = int(notes[-1]["pid"])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        hang.unlink()
        told = week.told("RUN_CRASHED") + week.told("crashed")
        week.advance(timedelta(minutes=1))
        week.tick(healthy=False)  # reconciles the dead run: told, and it stays due
        assert week.told("RUN_CRASHED") + week.told("crashed") > told, "a killed run was not told"
        return
    if kind == "garbage":
        name = random.Random(week.now.timestamp()).choice(HOME_FILES)
        (week.home / name).write_bytes(os.urandom(512))
        return  # rebuilt by the next tick (the final check: no traceback, nothing lost)
    if kind == "edit":
        asset = root / "assets" / "rows.py"
        week.edits += 1
        asset.write_text(INGEST.replace('"n": 1', f'"n": {week.edits + 1}'))  # a real change of code
        week.advance(timedelta(hours=1))
        envelope = week.tick(healthy=False)
        code, status = week.croft("status")
        assert any(p["code"] == "SCHEDULE_HELD" for p in status["problems"]), (status, envelope)
        week.advance(timedelta(minutes=2))
        code, ran = week.croft("run", CROFT_NOW=to_iso(week.now + timedelta(seconds=1)))
        assert code == 0, ran  # the person ran it: approved
        return
    if kind == "clock-back":
        hours = 2 + int(week.now.timestamp()) % 4
        ahead = week.now + timedelta(hours=hours)
        saved = week.now
        week.now = ahead
        week.ahead_at.add(week.at())
        week.tick(healthy=False)
        week.now = saved + timedelta(minutes=1)
        before = week.told("CLOCK_MOVED_BACK")
        week.tick(healthy=False)
        assert week.told("CLOCK_MOVED_BACK") > before, "the clock moving back was not told"
        return
    if kind == "gone":
        config = root / "croft.json"
        text = config.read_text()
        config.unlink()
        before = week.told("PROJECT_GONE")
        week.tick(healthy=False)
        assert week.told("PROJECT_GONE") > before, "a project gone was not told"
        week.advance(timedelta(minutes=1))
        config.write_text(text)  # back a minute later (git stash pop)
        return
    if kind == "zero-history":
        history = root / ".croft" / "runs.sqlite"
        saved = root / ".croft" / "runs.sqlite.saved"
        os.replace(history, saved)  # moved aside, a 0-byte file in its place
        for suffix in ("-wal", "-shm"):
            Path(f"{history}{suffix}").unlink(missing_ok=True)
        history.write_bytes(b"")
        before = week.told("HISTORY_LOST")
        week.tick(healthy=False)
        assert week.told("HISTORY_LOST") > before, "a lost history was not told"
        os.replace(saved, history)  # the person puts the old file back, as the hint says
        return
    if kind == "full-disk":
        assert week.disk is not None
        filler = fill(week.disk)
        try:
            week.advance(timedelta(hours=1))
            envelope = week.tick(healthy=False)
            codes = {p["code"] for p in envelope["problems"]}
            assert "DISK_FULL" in codes, envelope["problems"]
        finally:
            filler.unlink()
        return
    raise AssertionError(kind)


def test_a_seeded_week_of_faults_loses_nothing_runs_nothing_twice_and_reports_every_fault(
    make_project, tmp_path, _croft_home
):
    rng = random.Random(SEED)
    with _place(tmp_path) as disk:
        root = make_project({"assets/rows.py": INGEST}, root=(disk or tmp_path) / "proj", timezone="UTC")
        week = Week(root, _croft_home, tmp_path, disk)
        code, ran = week.croft("run")
        assert code == 0, ran
        conn = open_history(root / ".croft")
        write_scheduling(conn, "on", week.now, via="os-job")
        conn.close()
        Registry(_croft_home).add(root, "os-job", week.now)
        faults = [f for f in FAULTS if f != "full-disk" or disk is not None]
        done: list[str] = []
        end = START + WEEK
        while week.now < end:
            for _ in range(rng.randint(1, 4)):  # awake: ticks a few minutes apart
                week.tick()
                week.advance(timedelta(minutes=rng.randint(1, 25)))
            if rng.random() < 0.6:
                kind = faults[len(done) % len(faults)] if len(done) < len(faults) else rng.choice(faults)
                _fault(week, kind)
                done.append(kind)
            week.advance(timedelta(hours=rng.randint(1, 10), minutes=rng.randint(0, 59)))  # asleep
        week.tick()
        assert set(done) == set(faults), done  # every kind of fault came at least once

        runs = _runs(root)
        rows = _rows(root)
    assert all("Traceback" not in out for out in week.outputs)
    assert "Traceback" not in (_croft_home / "logs" / "tick.log").read_text(errors="replace")
    ok = [r for r in runs if r["status"] == "succeeded"]
    started = sorted(to_iso(parse_instant(r["started_at"])) for r in ok)
    # no row lost, none made twice: every run that succeeded left its one row, at the clock it ran at
    assert sorted(rows) == started, (len(rows), len(started))
    # nothing run twice: at most one scheduled run per hourly fire (the runs at a clock set ahead aside)
    scheduled = [
        _hour(parse_instant(r["started_at"]))
        for r in ok
        if r["trigger"] == "schedule" and to_iso(parse_instant(r["started_at"])) not in week.ahead_at
    ]
    assert len(scheduled) == len(set(scheduled)), sorted(h for h in scheduled if scheduled.count(h) > 1)
    # every fire run or reported: each hour a healthy tick came had a run, unless a fault was told in it
    handled = {_hour(parse_instant(r["started_at"])) for r in ok}
    missed = sorted({_hour(t) for t in week.healthy} - handled - week.excused)
    assert missed == [], missed
    assert len(scheduled) > 20  # a week of faults still ran most of its fires


pytestmark = pytest.mark.processes
