"""A project tick started by the OS job's command, by ``croft serve`` and by hand, and the scheduled run
each starts, see the same ``CROFT_*`` knobs and proxy settings, and none of the shell's other variables.

The run's asset writes what it sees into its table, so the test reads the environment at the end of
the chain: tick --all or serve -> project tick -> croft run --due -> the asset's code.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from enginekit import table
from schedulekit import croft_json, env_at, query, wait_for_runs
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.history.db import open_history
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes

NOW = "2026-06-01T10:05:00Z"  # the 10:00Z fire of an hourly schedule is due
SHELL = {
    "CROFT_LEASE_WAIT_MS": "1234",
    "CROFT_NOTIFY_TIMEOUT_MS": "4321",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "NO_PROXY": "localhost,127.0.0.1",
    "LEAKED_TOKEN": "s3cret-from-the-shell",
}
PROBE = f"""
import json, os
from croft import ingest

SEEN = {sorted(SHELL)!r}


@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield {{"id": 1, "seen": json.dumps({{name: os.environ.get(name) for name in SEEN}}, sort_keys=True)}}
"""


def _project(make_project: Any, root: Path, via: str | None) -> Path:
    """A project whose probe a person ran at 09:30 (so its code is not held), scheduling on; registered
    for ``via`` unless None."""
    make_project({"assets/probe.py": PROBE}, root=root)
    code, envelope = croft_json(root, "2026-06-01T09:30:00Z", "run")  # a person ran it: not held
    assert code == 0, envelope
    conn = open_history(root / ".croft")
    try:
        write_scheduling(conn, "on", parse_instant("2026-06-01T09:30:00Z"), via=via or "serve")  # type: ignore[arg-type]
    finally:
        conn.close()
    if via is not None:
        Registry().add(root, via, parse_instant("2026-06-01T09:30:00Z"))  # type: ignore[arg-type]
    return root


def _scheduled_run_done(root: Path) -> None:
    done = "SELECT id FROM runs WHERE trigger = 'schedule' AND status != 'running'"
    wait_for(lambda: query(root, done), f"a scheduled run of {root.name} to finish")
    wait_for_runs(root)


def _seen(root: Path) -> dict[str, str | None]:
    rows = table(root, "probe")
    assert len(rows) == 1, rows
    seen: dict[str, str | None] = json.loads(rows[0]["seen"])
    return seen


def test_every_way_of_ticking_passes_the_same_knobs_to_the_run(make_project: Any, tmp_path: Path) -> None:
    env = env_at(NOW, **SHELL)
    by_hand = _project(make_project, tmp_path / "by-hand", None)
    code, envelope = croft_json(by_hand, NOW, "tick", **SHELL)
    assert code == 0 and envelope["data"]["spawned"], envelope
    _scheduled_run_done(by_hand)

    os_job = _project(make_project, tmp_path / "os-job", "os-job")
    subprocess.run([sys.executable, "-m", "croft", "tick", "--all"], env=env, check=True, timeout=60)
    _scheduled_run_done(os_job)

    served = _project(make_project, tmp_path / "served", "serve")
    server = subprocess.Popen(
        [sys.executable, "-m", "croft", "serve"],
        env=env | {"CROFT_SERVE_INTERVAL_MS": "60000"},  # it ticks once at start, which is all this needs
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _scheduled_run_done(served)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

    expected = {name: value for name, value in SHELL.items() if name != "LEAKED_TOKEN"} | {
        "LEAKED_TOKEN": None
    }
    assert _seen(by_hand) == expected
    assert _seen(os_job) == expected
    assert _seen(served) == expected
