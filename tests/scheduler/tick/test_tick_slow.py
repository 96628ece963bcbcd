"""A scheduled run past an asset's ``slow_after`` is told once, as a notice, by the project tick.

Real ``croft tick`` processes on a moved clock; the run is a real detached ``croft run --due`` whose
asset hangs while a file exists (CROFT_TEST_HANG, a CROFT_* knob every scheduled run inherits). The
webhook goes to a real local HTTP server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from schedulekit import croft_json, env_at, hanging_ingest, hanging_project, query, setting, tick
from waiting import wait_for

pytestmark = pytest.mark.processes

QUICK = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield [{"id": 1}]
"""
T0 = "2026-06-01T10:05:00Z"


def _sent(root: Path, event: str) -> list[dict[str, Any]]:
    path = root / ".croft" / "logs" / "notifications.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [e for e in map(json.loads, lines) if e.get("event") == event]


def _project(make_project, tmp_path, extra: str = "", **config: Any) -> tuple[Path, Path]:
    files = {"assets/feed.py": hanging_ingest(f'slow_after="2m"{extra}'), "assets/other.py": QUICK}
    return hanging_project(make_project, tmp_path, files, **config)


def _started(root: Path, flag: Path) -> str:
    data = tick(root, T0, wait=False, CROFT_TEST_HANG=str(flag))
    run_id = next(s["runId"] for s in data["spawned"] if "feed" in s["assets"])
    wait_for(
        lambda: query(
            root, "SELECT 1 FROM steps WHERE run_id = ? AND asset = 'feed' AND status = 'running'", run_id
        ),
        "the scheduled run to start feed",
    )
    return run_id


def test_a_slow_scheduled_run_is_told_once_at_its_bound_and_goes_on(make_project, tmp_path, server):
    server.route("POST", "/hook", server.reply(204))
    root, flag = _project(make_project, tmp_path, notify={"webhook": server.url("/hook")})
    run_id = _started(root, flag)
    try:
        tick(root, "2026-06-01T10:06:30Z", wait=False)  # 1 min 30 s: not yet
        assert _sent(root, "slow") == []
        tick(root, "2026-06-01T10:07:00Z", wait=False)  # 2 min: told
        tick(root, "2026-06-01T10:08:00Z", wait=False)  # and never again for this run
        tick(root, "2026-06-01T10:09:00Z", wait=False)
        desktop = [e for e in _sent(root, "slow") if e["kind"] == "desktop"]
        assert len(desktop) == 1 and desktop[0]["runId"] == run_id
        assert desktop[0]["body"].startswith(f"feed is slow in scheduled run {run_id}: feed has run 2 min")
        assert "slow after 2 min" in desktop[0]["body"] and f"croft logs {run_id}" in desktop[0]["body"]
        hooks = [r.json() for r in server.requests_to("/hook")]
        assert [h["event"] for h in hooks] == ["slow"]
        assert hooks[0]["ok"] is True and hooks[0]["problems"] == []
        assert hooks[0]["data"]["runId"] == run_id and hooks[0]["data"]["status"] == "running"
        assert hooks[0]["data"]["steps"] == [
            {"asset": "feed", "status": "running", "runningS": 120.0, "slowAfterS": 120.0}
        ]
        # a notice, not a failure: the run is still running, and no failure was told
        assert query(root, "SELECT status FROM runs WHERE id = ?", run_id)[0]["status"] == "running"
        assert _sent(root, "failed") == []
    finally:
        flag.unlink()
    tick(root, "2026-06-01T10:09:30Z")
    assert query(root, "SELECT status FROM runs WHERE id = ?", run_id)[0]["status"] == "succeeded"
    assert len([e for e in _sent(root, "slow") if e["kind"] == "desktop"]) == 1


def test_max_runtime_still_ends_a_slow_run_and_the_next_run_is_told_afresh(make_project, tmp_path):
    root, flag = _project(make_project, tmp_path, extra=', max_runtime="3m"')
    first = _started(root, flag)
    tick(root, "2026-06-01T10:07:10Z", wait=False)
    assert [e["runId"] for e in _sent(root, "slow") if e["kind"] == "desktop"] == [first]
    tick(root, "2026-06-01T10:08:10Z")  # past max_runtime: ended as TIMEOUT, told as a failure
    assert query(root, "SELECT status FROM runs WHERE id = ?", first)[0]["status"] == "failed"
    assert [e["runId"] for e in _sent(root, "failed") if e["kind"] == "desktop"] == [first]
    assert len(_sent(root, "slow")) == 1
    # the next fire's run is slow too: a run of its own, told once of its own
    data = tick(root, "2026-06-01T11:00:10Z", wait=False, CROFT_TEST_HANG=str(flag))
    second = next(s["runId"] for s in data["spawned"] if "feed" in s["assets"])
    try:
        wait_for(
            lambda: query(root, "SELECT 1 FROM steps WHERE run_id = ? AND status = 'running'", second),
            "the next scheduled run to start feed",
        )
        tick(root, "2026-06-01T11:02:30Z", wait=False)
        assert [e["runId"] for e in _sent(root, "slow") if e["kind"] == "desktop"] == [first, second]
        # what was told is kept for the runs still running only
        assert setting(root, "notify.slowTold") == [f"{second} feed"]
    finally:
        flag.unlink()
    tick(root, "2026-06-01T11:02:40Z")


def test_a_run_by_hand_is_never_told_slow(make_project, tmp_path):
    root, flag = _project(make_project, tmp_path)
    by_hand = subprocess.Popen(
        [sys.executable, "-m", "croft", "run", "feed", "--json"],
        cwd=root,
        env=env_at(T0, CROFT_TEST_HANG=str(flag)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(
            lambda: query(
                root,
                "SELECT 1 FROM steps s JOIN runs r ON r.id = s.run_id"
                " WHERE r.trigger = 'manual' AND s.asset = 'feed' AND s.status = 'running'",
            ),
            "the run by hand to start feed",
        )
        tick(root, "2026-06-01T10:20:00Z", wait=False)  # 15 min into it
        assert _sent(root, "slow") == []
    finally:
        flag.unlink()
        assert by_hand.wait(timeout=60) == 0
    tick(root, "2026-06-01T10:20:30Z")  # and the runs the ticks started have ended


def test_slow_after_is_checked_by_validate_in_assets_and_sql_headers(make_project):
    root = make_project(
        {
            "assets/feed.py": hanging_ingest('slow_after="30s"'),
            "assets/report.sql": "-- slow after: 10m\nSELECT 1 AS id\n",
            "assets/late.sql": "-- slow after: soon\nSELECT 1 AS id\n",
        }
    )
    code, envelope = croft_json(root, T0, "validate")
    assert code == 2
    bad = sorted(p["message"] for p in envelope["problems"] if p["code"] == "ASSET_INVALID")
    assert len(bad) == 2, envelope["problems"]
    assert "slow_after" in bad[0] and "from 1 min to 7 days" in bad[0] and "'30s'" in bad[0]
    assert "`-- slow after: soon` is not a duration" in bad[1]
