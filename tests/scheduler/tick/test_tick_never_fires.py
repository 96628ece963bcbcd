"""An ingest whose schedule the schedule language refuses never fires: once only `croft validate` said so.
Now `schedule on` warns and lists it, and `schedule status`, `status` and every tick (the idle ones too)
show SCHEDULE_INVALID for that asset, on real processes; fixing the file ends it by itself."""

from __future__ import annotations

import pytest
from schedulekit import ISSUES, croft_json, tick

pytestmark = pytest.mark.processes

T0 = "2026-06-01T10:05:00Z"


def _invalid(problems: list[dict]) -> list[dict]:
    return [p for p in problems if p["code"] == "SCHEDULE_INVALID"]


def test_an_ingest_that_never_fires_is_shown_everywhere_until_its_schedule_is_fixed(make_project):
    root = make_project(
        {
            "assets/issues.py": ISSUES.format(schedule="every hour"),
            "assets/odd.py": ISSUES.format(schedule="every 7 minutes"),
        }
    )
    assert croft_json(root, "2026-06-01T09:30:00Z", "run")[0] == 0

    code, on = croft_json(root, "2026-06-01T09:30:00Z", "schedule", "on", "--no-os-job")
    assert code == 0 and on["ok"], on
    [warned] = _invalid(on["problems"])
    assert warned["asset"] == "odd" and warned["severity"] == "warning"
    assert "every 7 minutes" in warned["message"] and warned["suggestion"] == "every 6 minutes"
    [row] = [r for r in on["data"]["assets"] if r["asset"] == "odd"]
    assert row["held"] == {"code": "SCHEDULE_INVALID", "why": row["held"]["why"], "release": "croft validate"}

    data = tick(root, T0)  # the full tick: it runs the hourly ingest and says why odd never will
    assert [s["assets"] for s in data["spawned"]] == [["issues"]]
    [held] = [h for h in data["held"] if h["asset"] == "odd"]
    assert held["code"] == "SCHEDULE_INVALID" and "never fires" in held["message"]

    tick(root, "2026-06-01T10:06:00Z")  # settles the run; nothing else to do, so it leaves the memo
    idle = tick(root, "2026-06-01T10:07:00Z")
    assert idle["path"] == "idle", "an invalid schedule must not keep the project off the idle path"
    assert [h["code"] for h in idle["held"]] == ["SCHEDULE_INVALID"]

    code, status = croft_json(root, "2026-06-01T10:07:00Z", "status")
    assert code == 0
    [warning] = _invalid(status["problems"])
    assert warning["asset"] == "odd"
    [odd] = [a for a in status["data"]["assets"] if a["asset"] == "odd"]
    assert [p["code"] for p in odd["problems"]] == ["SCHEDULE_INVALID"]
    assert odd["schedule"]["invalid"]["code"] == "SCHEDULE_INVALID"

    code, sched = croft_json(root, "2026-06-01T10:07:00Z", "schedule", "status")
    assert code == 0 and [p["asset"] for p in _invalid(sched["problems"])] == ["odd"]

    (root / "assets" / "odd.py").write_text(ISSUES.format(schedule="every 6 minutes"))
    data = tick(root, "2026-06-01T10:08:00Z")
    assert not [h for h in data["held"] if h["code"] == "SCHEDULE_INVALID"]
    [odd_held] = [h for h in data["held"] if h["asset"] == "odd"]
    assert odd_held["code"] == "SCHEDULE_HELD"  # fixed, and a changed file waits for a person as always
    code, status = croft_json(root, "2026-06-01T10:08:00Z", "status")
    assert not _invalid(status["problems"])
