"""Jitter, quiet hours and an asset's timed pause move the instant the minute gate sleeps until: each
deferred fire starts at its own minute through ``croft tick --all`` (the OS job's command), never skipped
until the next fire because the gate believed nothing could happen."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from schedulekit import croft_json, query, wait_for_runs

from croft.core.clock import parse_instant
from croft.history.db import open_history
from croft.schedule.jitter import jitter_delay
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user import wakefile
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes

INGEST = """
from croft import ingest


@ingest(schedule="every hour", key="id"{options})
def rows(ctx):
    yield [{{"id": 1}}]
"""


def _minute(at: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "croft", "tick", "--all"],
        capture_output=True,
        text=True,
        env=os.environ | {"CROFT_NOW": at},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_jittered_quiet_and_paused_fires_start_at_their_own_minute_through_the_gate(
    make_project, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    root = make_project(
        {
            "assets/jittered.py": INGEST.format(options=', jitter="20m"'),
            "assets/quieted.py": INGEST.format(options=', quiet=["10:50-11:20"]'),
            "assets/paused.py": INGEST.format(options=""),
        },
        timezone="UTC",
    )
    assert croft_json(root, "2026-06-01T10:05:00Z", "run")[0] == 0
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", parse_instant("2026-06-01T10:06:00Z"), via="os-job")
    conn.close()
    Registry().add(root, "os-job", parse_instant("2026-06-01T10:06:00Z"))
    code, paused = croft_json(root, "2026-06-01T10:07:00Z", "schedule", "pause", "paused", "--for", "65m")
    assert code == 0, paused
    old = 1_700_000_000_000_000_000  # what the minutes read, older than a racy stamp
    for path in [*root.glob("assets/*"), root / "croft.json", root / "assets", root]:
        os.utime(path, ns=(old, old))

    fire = parse_instant("2026-06-01T11:00:00Z")
    delay = jitter_delay("jittered", fire, 20 * 60, fire + timedelta(hours=1))
    jittered_at = fire + timedelta(minutes=math.ceil(delay.total_seconds() / 60))
    expected = {
        "jittered": jittered_at.strftime("%H:%M"),
        "quieted": "11:20",  # the window's end
        "paused": "11:12",  # the pause's end (10:07 + 65 min)
    }
    gated = 0
    start = parse_instant("2026-06-01T10:56:00Z")
    for minute in range(30):
        at = (start + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
        gated += wakefile.settles(str(_croft_home))
        _minute(at)
        wait_for_runs(root)
    rows = query(
        root,
        "SELECT r.started_at, s.asset FROM runs r JOIN steps s ON s.run_id = r.id"
        " WHERE r.trigger = 'schedule' AND s.attempt > 0 ORDER BY r.started_at",
    )
    started = {r["asset"]: r["started_at"][11:16] for r in rows}
    assert started == expected, rows
    assert len(rows) == 3  # each ran once: the quiet window's fire and the paused fire are not run twice
    assert gated > 5  # the gate settled the quiet minutes between: the instants above were its wake-ups
