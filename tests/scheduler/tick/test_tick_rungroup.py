"""What a scheduled run's asset code starts ends with the run: when it finishes, past its ceiling, or
after it crashed. A run typed by hand leaves its terminal's job alone.

Real ``croft tick`` / ``croft run --due`` processes on a moved clock; the asset starts ``sleep 600 &``
through a shell (so the sleep is the run's grandchild, and an orphan once the shell exits) and writes the
sleep's pid to a file the test reads.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from schedulekit import croft_json, query, runs_of, schedule_on, tick
from waiting import wait_for

from croft.core.identity import ProcessIdentity, is_alive, start_time

pytestmark = pytest.mark.processes

LEAVES = """
from croft import ingest


@ingest(schedule="every hour", key="id", max_runtime="1m")
def rows(ctx):
    import os
    import subprocess
    import time

    pids = os.environ["CROFT_TEST_PIDS"]
    trap = "trap '' TERM; " if os.environ.get("CROFT_TEST_STUBBORN") else ""
    subprocess.run(f"({trap}exec sleep 600) > /dev/null 2>&1 & echo $! >> '{pids}'", shell=True, check=True)
    hang = os.environ.get("CROFT_TEST_HANG")
    waited = 0.0
    while hang and os.path.exists(hang) and waited < 120:
        time.sleep(0.05)
        waited += 0.05
    yield [{"id": 1}]
"""
T0 = "2026-06-01T10:05:00Z"


@pytest.fixture
def leaver(make_project, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    root = make_project({"assets/feed.py": LEAVES})
    pids = tmp_path / "pids"
    code, envelope = croft_json(root, "2026-06-01T09:30:00Z", "run", CROFT_TEST_PIDS=str(pids))
    assert code == 0, envelope
    for pid in _sleeps(pids):  # the run by hand: its sleep is the person's, and outlives it (see below)
        os.kill(pid.pid, signal.SIGKILL)
    pids.unlink()
    schedule_on(root, "2026-06-01T09:30:00Z")
    try:
        yield root, pids
    finally:
        for pid in _sleeps(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid.pid, signal.SIGKILL)


def _sleeps(pids: Path) -> list[ProcessIdentity]:
    if not pids.exists():
        return []
    return [ProcessIdentity(int(x), start_time(int(x)), None) for x in pids.read_text().split()]


def _started_sleep(pids: Path) -> ProcessIdentity:
    wait_for(lambda: _sleeps(pids), "the asset to start its sleep")
    (sleep,) = _sleeps(pids)
    assert sleep.start is not None and is_alive(sleep)
    return sleep


def test_a_grandchild_of_a_scheduled_run_is_gone_when_the_run_ends(leaver) -> None:
    root, pids = leaver
    data = tick(root, T0, CROFT_TEST_PIDS=str(pids))  # waits for the run to end
    (spawned,) = data["spawned"]
    assert [r["status"] for r in runs_of(root) if r["id"] == spawned["runId"]] == ["succeeded"]
    (sleep,) = _sleeps(pids)
    wait_for(lambda: not is_alive(sleep), f"the run's grandchild (sleep, pid {sleep.pid}) to be ended")


def test_a_run_by_hand_leaves_its_terminal_job_alone(make_project, tmp_path: Path) -> None:
    """Only a run that leads its own session (one the tick started) ends its group: a run typed in a
    shell shares the shell job's group (a pipeline's ``tee``), so what it starts stays the person's."""
    root = make_project({"assets/feed.py": LEAVES})
    pids = tmp_path / "pids"
    try:
        code, envelope = croft_json(root, T0, "run", CROFT_TEST_PIDS=str(pids))
        assert code == 0, envelope
        (sleep,) = _sleeps(pids)
        assert is_alive(sleep)
    finally:
        for pid in _sleeps(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid.pid, signal.SIGKILL)


def test_past_its_ceiling_the_run_and_a_grandchild_that_ignores_sigterm_are_ended(
    leaver, tmp_path: Path
) -> None:
    root, pids = leaver
    flag = tmp_path / "hang"
    flag.touch()
    knobs = {"CROFT_TEST_PIDS": str(pids), "CROFT_TEST_HANG": str(flag), "CROFT_TEST_STUBBORN": "1"}
    run_id = tick(root, T0, wait=False, **knobs)["spawned"][0]["runId"]
    sleep = _started_sleep(pids)
    row = query(root, "SELECT pid, proc_start, boot_id FROM runs WHERE id = ?", run_id)[0]
    run = ProcessIdentity(row["pid"], row["proc_start"], row["boot_id"])
    tick(root, "2026-06-01T10:07:00Z", **knobs)  # past the 1 min ceiling
    assert not is_alive(run)
    assert not is_alive(sleep), "the grandchild that ignores SIGTERM outlived the TIMEOUT"
    assert query(root, "SELECT status FROM runs WHERE id = ?", run_id)[0]["status"] == "failed"


def test_the_tick_after_a_run_was_killed_ends_what_it_left_running(leaver, tmp_path: Path) -> None:
    root, pids = leaver
    flag = tmp_path / "hang"
    flag.touch()
    knobs = {"CROFT_TEST_PIDS": str(pids), "CROFT_TEST_HANG": str(flag)}
    run_id = tick(root, T0, wait=False, **knobs)["spawned"][0]["runId"]
    sleep = _started_sleep(pids)
    row = query(root, "SELECT pid, proc_start, boot_id FROM runs WHERE id = ?", run_id)[0]
    run = ProcessIdentity(row["pid"], row["proc_start"], row["boot_id"])
    os.kill(run.pid, signal.SIGKILL)  # no clean-up of its own: an OOM kill, say
    wait_for(lambda: not is_alive(run), f"the killed run (pid {run.pid}) to be gone")
    assert is_alive(sleep)  # its orphan lives on, until the next tick
    tick(root, "2026-06-01T10:05:30Z", **knobs)
    wait_for(lambda: not is_alive(sleep), f"the killed run's grandchild (pid {sleep.pid}) to be ended")
    assert query(root, "SELECT status FROM runs WHERE id = ?", run_id)[0]["status"] == "crashed"
