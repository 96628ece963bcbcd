"""No surprise runs: after a pause or off, each due ingest runs once (never a backlog), an edited schedule
is held like any code change, and ``croft schedule status`` says both before they happen."""

from __future__ import annotations

import pytest
from schedulekit import ISSUES, croft_json, runs_of, schedule_on, state_of, tick

from croft.scheduler.control.catchup import catch_up_text

pytestmark = pytest.mark.processes  # real croft ticks and runs


def _scheduled(root):
    return [r for r in runs_of(root) if r["trigger"] == "schedule"]


def _prepared(make_project):
    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")})
    code, envelope = croft_json(root, "2026-06-01T09:30:00Z", "run")
    assert code == 0, envelope
    schedule_on(root, "2026-06-01T09:30:00Z")
    return root


def test_a_long_pause_ends_in_one_run_said_beforehand(make_project):
    root = _prepared(make_project)
    assert croft_json(root, "2026-06-01T09:31:00Z", "schedule", "pause")[0] == 0
    for hour in range(10, 24):  # fourteen hourly fires pass while paused; the ticks start nothing
        assert tick(root, f"2026-06-01T{hour:02d}:00:30Z")["exited"] == "paused"
    code, status = croft_json(root, "2026-06-01T23:10:00Z", "schedule", "status")
    assert code == 0
    assert status["data"]["catchUp"] == [
        {
            "asset": "issues",
            "missedFires": 14,
            "text": "will run once when the pause ends: 14 fires missed while paused",
        }
    ]
    assert croft_json(root, "2026-06-01T23:11:00Z", "schedule", "on", "--no-os-job")[0] == 0
    code, status = croft_json(root, "2026-06-01T23:11:30Z", "schedule", "status")
    assert status["data"]["catchUp"][0]["text"] == "will run once at the next tick: 14 fires missed"
    back = tick(root, "2026-06-01T23:12:00Z")
    assert [s["assets"] for s in back["spawned"]] == [["issues"]]
    assert "14 missed fires run once" in back["spawned"][0]["reason"]
    assert tick(root, "2026-06-01T23:13:00Z")["spawned"] == []
    assert len(_scheduled(root)) == 1
    assert state_of(root, "issues")["last_fire_at"] == "2026-06-01T23:00:00.000Z"
    _, after = croft_json(root, "2026-06-01T23:14:00Z", "schedule", "status")
    assert after["data"]["catchUp"] == []


def test_off_then_on_runs_each_due_ingest_once(make_project):
    root = _prepared(make_project)
    assert croft_json(root, "2026-06-01T09:31:00Z", "schedule", "off")[0] == 0
    assert tick(root, "2026-06-01T15:00:30Z")["exited"] == "off"
    _, status = croft_json(root, "2026-06-01T15:01:00Z", "schedule", "status")
    assert status["data"]["catchUp"][0]["text"].startswith("will run once when scheduling is on again")
    assert croft_json(root, "2026-06-01T15:02:00Z", "schedule", "on", "--no-os-job")[0] == 0
    assert len(tick(root, "2026-06-01T15:03:00Z")["spawned"]) == 1
    assert tick(root, "2026-06-01T15:04:00Z")["spawned"] == []
    assert len(_scheduled(root)) == 1


def test_a_schedule_edited_in_the_file_is_held_like_a_code_change(make_project):
    root = _prepared(make_project)
    (root / "assets" / "issues.py").write_text(ISSUES.format(schedule="every 5 minutes"))
    held = tick(root, "2026-06-01T10:05:00Z")
    assert held["spawned"] == [] and [h["code"] for h in held["held"]] == ["SCHEDULE_HELD"]
    _, status = croft_json(root, "2026-06-01T10:05:30Z", "schedule", "status")
    assert status["data"]["catchUp"] == []  # held for the edit, so nothing runs at the next tick
    assert croft_json(root, "2026-06-01T10:06:00Z", "run", "issues")[0] == 0  # a person runs it
    assert len(tick(root, "2026-06-01T10:10:10Z")["spawned"]) == 1


def test_catch_up_words():
    assert catch_up_text(1, "on") == "will run once at the next tick: 1 fire missed"
    assert catch_up_text(60, "paused").endswith("50 or more fires missed while paused")
