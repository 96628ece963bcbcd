"""One asset paused: held by the due policy while the rest of its project runs, through the real tick."""

from __future__ import annotations

import pytest
from schedulekit import ISSUES, croft_json, query, runs_of, schedule_on, tick

from croft.core.clock import parse_instant
from croft.scheduler.due import AssetInfo, DueInput, due_work
from croft.scheduler.freshness import Facts, Fresh, cause_of
from croft.scheduler.pause import active_pauses, pause_ends
from croft.scheduler.setting import Scheduling

ON = Scheduling(state="on")


def _work(now: str, pauses: dict) -> object:
    infos = {
        n: AssetInfo(name=n, kind="ingest", schedule="every hour", cron="0 * * * *", code_hash="h")
        for n in ("issues", "pulls")
    }
    state = {n: {"approved_code_hash": "h"} for n in infos}
    return due_work(DueInput(infos, parse_instant(now), "UTC", ON, state=state, pauses=pauses))


def test_a_paused_asset_is_held_with_its_own_release_while_the_other_is_due():
    work = _work("2026-06-01T10:05:00Z", {"issues": {"since": "2026-06-01T09:00:00Z", "until": None}})
    assert work.groups == [["pulls"]]
    [(name, hold)] = work.held
    assert name == "issues" and hold.code == "SCHEDULE_PAUSED" and hold.kind == "asset_paused"
    assert "croft schedule resume issues" in hold.reason


def test_a_timed_pause_ends_by_itself_and_its_end_is_an_instant_to_look_again():
    pauses = {"issues": {"since": "2026-06-01T09:00:00Z", "until": "2026-06-01T11:00:00.000Z"}}
    assert [n for n, _ in _work("2026-06-01T10:59:00Z", pauses).held] == ["issues"]
    assert _work("2026-06-01T11:00:00Z", pauses).groups == [["issues"], ["pulls"]]
    assert pause_ends(pauses, parse_instant("2026-06-01T10:00:00Z")) == [
        parse_instant("2026-06-01T11:00:00Z")
    ]
    assert active_pauses({"x": {"until": "not a time"}}, parse_instant("2026-06-01T10:00:00Z")) == {"x": None}


def test_a_paused_asset_is_the_cause_of_its_breach():
    fresh = Fresh("issues", 3600, "2026-06-01T08:00:00Z", None, "2026-06-01T09:00:00Z", True, 7200)
    facts = Facts(state="on", holds={"issues": ("asset_paused", "paused; croft schedule resume issues")})
    cause = cause_of(fresh, facts)
    assert cause.code == "asset_paused" and cause.fix == "croft schedule resume issues"


PULLS = ISSUES.replace("def rows", "def pulls_rows")


@pytest.mark.processes
def test_a_paused_asset_skips_while_its_project_runs(make_project):
    root = make_project(
        {
            "assets/issues.py": ISSUES.format(schedule="every hour"),
            "assets/pulls.py": PULLS.format(schedule="every hour"),
        }
    )
    assert croft_json(root, "2026-06-01T09:30:00Z", "run")[0] == 0
    schedule_on(root, "2026-06-01T09:30:00Z")
    code, paused = croft_json(root, "2026-06-01T09:40:00Z", "schedule", "pause", "issues", "--for", "2h")
    assert code == 0 and paused["data"]["until"] == "2026-06-01T11:40:00.000Z", paused
    code, wrong = croft_json(root, "2026-06-01T09:40:00Z", "schedule", "pause", "isues")
    assert code != 0 and wrong["problems"][0]["code"] == "UNKNOWN_ASSET"
    first = tick(root, "2026-06-01T10:05:00Z")
    assert [s["assets"] for s in first["spawned"]] == [["pulls"]]
    assert [h["code"] for h in first["held"]] == ["SCHEDULE_PAUSED"]
    _, status = croft_json(root, "2026-06-01T10:06:00Z", "schedule", "status")
    row = next(a for a in status["data"]["assets"] if a["asset"] == "issues")
    assert row["held"]["release"] == "croft schedule resume issues"
    assert croft_json(root, "2026-06-01T10:07:00Z", "schedule", "resume", "issues")[1]["data"]["wasPaused"]
    again = tick(root, "2026-06-01T10:08:00Z")
    assert [s["assets"] for s in again["spawned"]] == [["issues"]]
    assert len([r for r in runs_of(root) if r["trigger"] == "schedule"]) == 2
    assert query(root, "SELECT COUNT(*) AS n FROM runs WHERE trigger = 'schedule'")[0]["n"] == 2
