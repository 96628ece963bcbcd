"""A scheduled run past its maximum runtime is ended as TIMEOUT by the next tick: hung, stopped or gone.

Real ``croft tick`` processes on a moved clock; the run is a real detached ``croft run --due`` whose
asset hangs while a file exists (CROFT_TEST_HANG, a CROFT_* knob every scheduled run inherits).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from schedulekit import croft_json, hanging_ingest, hanging_project, query, runs_of, steps_of, tick
from waiting import wait_for

from croft.core.identity import ProcessIdentity, is_alive

pytestmark = pytest.mark.processes

T0 = "2026-06-01T10:05:00Z"


@pytest.fixture
def hanging(make_project, tmp_path):
    return hanging_project(make_project, tmp_path, {"assets/feed.py": hanging_ingest('max_runtime="1m"')})


def _started_run(root: Path, flag: Path) -> tuple[str, ProcessIdentity]:
    data = tick(root, T0, wait=False, CROFT_TEST_HANG=str(flag))
    run_id = data["spawned"][0]["runId"]
    wait_for(
        lambda: query(root, "SELECT 1 FROM steps WHERE run_id = ? AND status = 'running'", run_id),
        "the scheduled run to start its step",
    )
    row = query(root, "SELECT pid, proc_start, boot_id FROM runs WHERE id = ?", run_id)[0]
    return run_id, ProcessIdentity(row["pid"], row["proc_start"], row["boot_id"])


def _ended_as_timeout(root: Path, run_id: str) -> None:
    run = next(r for r in runs_of(root) if r["id"] == run_id)
    assert run["status"] == "failed"
    steps = query(root, "SELECT asset, status, error FROM steps WHERE run_id = ?", run_id)
    assert [(s["asset"], s["status"]) for s in steps] == [("feed", "failed")]
    error = json.loads(steps[0]["error"])
    assert error["code"] == "TIMEOUT" and error["retryable"] is True and "1 min" in error["message"]
    assert query(root, "SELECT * FROM leases") == []
    sent = (root / ".croft" / "logs" / "notifications.ndjson").read_text().splitlines()
    failed = [json.loads(line) for line in sent if json.loads(line)["event"] == "failed"]
    assert len(failed) == 1 and failed[0]["runId"] == run_id and "TIMEOUT" in failed[0]["body"]


def _next_fire_runs_normally(root: Path, flag: Path) -> None:
    flag.unlink()
    nxt = tick(root, "2026-06-01T11:00:30Z", CROFT_TEST_HANG=str(flag))
    assert [s["assets"] for s in nxt["spawned"]] == [["feed"]]
    assert [s["status"] for s in steps_of(root, nxt["spawned"][0]["runId"])] == ["unchanged"]


def test_before_its_ceiling_a_slow_run_is_left_alone(hanging):
    root, flag = hanging
    run_id, who = _started_run(root, flag)
    try:
        assert tick(root, "2026-06-01T10:05:50Z", wait=False)["spawned"] == []
        assert is_alive(who) and query(root, "SELECT status FROM runs WHERE id = ?", run_id)[0]["status"] == (
            "running"
        )
    finally:
        flag.unlink()
    tick(root, "2026-06-01T10:05:55Z")
    assert query(root, "SELECT status FROM runs WHERE id = ?", run_id)[0]["status"] == "succeeded"


def test_a_hung_scheduled_run_is_terminated_recorded_timeout_and_the_next_fire_runs(hanging):
    root, flag = hanging
    run_id, who = _started_run(root, flag)
    ended = tick(root, "2026-06-01T10:07:00Z")
    assert not is_alive(who)
    _ended_as_timeout(root, run_id)
    assert ended["spawned"] == []  # the fire it handled is not run again
    _next_fire_runs_normally(root, flag)


def test_a_stopped_run_is_ended_the_same_way(hanging):
    root, flag = hanging
    run_id, who = _started_run(root, flag)
    os.kill(who.pid, signal.SIGSTOP)
    try:
        tick(root, "2026-06-01T10:06:30Z")
        assert not is_alive(who)
    finally:
        if is_alive(who):
            os.kill(who.pid, signal.SIGKILL)
    _ended_as_timeout(root, run_id)
    _next_fire_runs_normally(root, flag)


def test_a_run_whose_process_is_gone_past_its_ceiling_is_timeout_not_a_crash(hanging):
    root, flag = hanging
    run_id, who = _started_run(root, flag)
    os.kill(who.pid, signal.SIGKILL)
    wait_for(lambda: not is_alive(who), f"the killed run (pid {who.pid}) to be gone")
    tick(root, "2026-06-01T10:07:00Z")
    _ended_as_timeout(root, run_id)


def test_max_runtime_is_checked_by_validate_in_assets_sql_headers_and_croft_json(make_project):
    root = make_project(
        {
            "assets/feed.py": hanging_ingest('max_runtime="a while"'),
            "assets/report.sql": "-- max_runtime: 90m\nSELECT 1 AS id\n",
        },
        maxRuntime="3h",
    )
    code, envelope = croft_json(root, T0, "validate")
    assert code == 2
    bad = [p for p in envelope["problems"] if p["code"] == "ASSET_INVALID"]
    assert len(bad) == 1 and "max_runtime" in bad[0]["message"] and "a while" in bad[0]["message"]
    (root / "croft.json").write_text(json.dumps({"timezone": "Europe/London", "maxRuntime": "soon"}))
    code, envelope = croft_json(root, T0, "validate")
    assert code == 2 and envelope["problems"][0]["code"] == "CONFIG_INVALID"
    assert "maxRuntime" in envelope["problems"][0]["message"]


def test_the_run_ceiling_is_the_largest_of_its_assets_else_the_project_default():
    from croft.scheduler.due import AssetInfo
    from croft.scheduler.tick.ceiling import DEFAULT_MAX_RUNTIME_S, run_ceiling_s

    infos = {
        "a": AssetInfo("a", "ingest", max_runtime_s=600.0),
        "b": AssetInfo("b", "sql", inputs=("a",)),
    }
    assert run_ceiling_s(["a"], infos, None) == 600.0
    assert run_ceiling_s(["a", "b"], infos, None) == DEFAULT_MAX_RUNTIME_S  # b takes the 2 h default
    assert run_ceiling_s(["a", "b"], infos, 1800.0) == 1800.0  # croft.json's maxRuntime
