"""The one place the page derives a row's state from croft's JSON: each state, and which one wins."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from croft.ui.derived import asset_steps, derived_state

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
ROOT = "/p"


def asset(**kw: Any) -> dict[str, Any]:
    return {"asset": "orders", "kind": "ingest", "stale": False, "staleReasons": [], "problems": [], **kw}


def last(status: str, at: str = "2026-03-02T09:58:00Z", **kw: Any) -> dict[str, Any]:
    return {"runId": "r_1", "at": at, "status": status, "attempt": 1, "code": None, "message": None, **kw}


def step(status: str) -> dict[str, Any]:
    return {"asset": "orders", "status": status, "startedAt": "2026-03-02T09:00:00Z", "finishedAt": None}


def state(a: dict[str, Any], held: Any = None, steps: Any = (), waiting: Any = ()) -> dict[str, Any]:
    return derived_state(a, held, list(steps), list(waiting), ROOT, NOW)


def test_never_run_ok_and_stale() -> None:
    assert state(asset(lastRun=None))["mark"] == "never"
    assert state(asset(lastRun=last("ok")))["mark"] == "ok"
    stale = state(asset(lastRun=last("ok"), stale=True, staleReasons=[{"text": "input x has new data"}]))
    assert stale["mark"] == "stale" and stale["detail"] == "input x has new data"
    assert stale["command"] == "croft run orders"


def test_running_says_for_how_long() -> None:
    s = state(asset(lastRun=last("running", at="2026-03-02T09:59:20Z")))
    assert s == {"mark": "running", "label": "running 40 s", "detail": None, "command": None}


def test_a_failure_counts_its_streak_from_the_newest_run() -> None:
    a = asset(lastRun=last("failed", code="HTTP_ERROR", message="500 from the shop"))
    three = state(a, steps=[step("failed"), step("crashed"), step("failed"), step("ok"), step("failed")])
    assert three["mark"] == "failed" and three["label"] == "failed 3 times in a row"
    assert (
        three["detail"] == "HTTP_ERROR: 500 from the shop"
        and three["command"] == "croft logs orders --failed"
    )
    assert state(a, steps=[step("failed"), step("ok")])["label"] == "failed once"


def test_retrying_at_comes_from_the_backoff_hold() -> None:
    hold = {
        "code": "SCHEDULE_BACKOFF",
        "reason": "failed at 09:58; tries again after 10:13",
        "until": "2026-03-02T10:13:00Z",
    }
    s = state(asset(lastRun=last("failed"), schedule={"hold": hold}), steps=[step("failed")])
    assert (
        s["mark"] == "retrying" and s["label"].startswith("retrying at 10:13") and "in 13 min" in s["label"]
    )


def test_waiting_for_a_slot_is_this_projects_group_in_the_queue() -> None:
    mine = [{"root": ROOT, "assets": ["orders"], "fire": "2026-03-02T10:00:00Z"}]
    theirs = [{"root": "/other", "assets": ["orders"], "fire": "2026-03-02T10:00:00Z"}]
    assert state(asset(lastRun=last("ok")), waiting=mine)["mark"] == "waiting"
    assert state(asset(lastRun=last("ok")), waiting=theirs)["mark"] == "ok"


def test_held_for_a_person_names_the_command_that_releases_it_and_beats_a_failure() -> None:
    held = {
        "code": "SCHEDULE_HELD",
        "why": "its code changed since a person last ran it",
        "release": "croft run orders",
    }
    s = state(asset(lastRun=last("failed")), held=held, steps=[step("failed")])
    assert s == {
        "mark": "held",
        "label": "held: SCHEDULE_HELD",
        "detail": "its code changed since a person last ran it",
        "command": "croft run orders",
    }
    busy = {"code": "ASSET_BUSY", "why": "run r_2 holds it", "release": "croft logs --runs"}
    assert state(asset(lastRun=last("ok")), held=busy)["mark"] == "ok"  # passes by itself: no mark


def test_running_wins_over_everything() -> None:
    held = {"code": "SCHEDULE_HELD", "why": "x", "release": "croft run orders"}
    assert state(asset(lastRun=last("running")), held=held)["mark"] == "running"


def test_an_invalid_asset_says_its_problem() -> None:
    bad = {"code": "SCHEDULE_INVALID", "message": "orders: 'every blue moon' is no schedule"}
    s = state(asset(lastRun=None, problems=[bad]))
    assert s["mark"] == "invalid" and s["command"] == "croft validate"


def test_the_assets_steps_are_its_last_attempt_of_each_run() -> None:
    runs = [
        {
            "trigger": "schedule",
            "steps": [
                {"asset": "orders", "attempt": 1, "status": "failed"},
                {"asset": "orders", "attempt": 2, "status": "ok"},
                {"asset": "summary", "attempt": 1, "status": "ok"},
            ],
        },
        {"trigger": "manual", "steps": [{"asset": "summary", "attempt": 1, "status": "ok"}]},
    ]
    got = asset_steps(runs, "orders")
    assert [(s["attempt"], s["status"], s["trigger"]) for s in got] == [(2, "ok", "schedule")]


def test_status_own_fields_win_the_streak_the_retry_and_a_start() -> None:
    """``failing``, ``lastRun.retryAt`` and a hold of kind ``starting`` are croft status's own facts
    (the terminal reads them too): the page takes them over anything it could count itself."""
    failing = asset(lastRun=last("failed"), failing={"count": 6, "since": "2026-03-02T09:00:00Z"})
    assert state(failing, steps=[step("failed")])["label"] == "failed 6 times in a row"
    retry = state(asset(lastRun=last("failed", retryAt="2026-03-02T10:02:00Z", message="500")))
    assert retry["mark"] == "retrying" and "retrying at" in retry["label"] and retry["detail"] == "500"
    starting = asset(lastRun=last("ok"), schedule={"hold": {"kind": "starting", "code": "ASSET_BUSY"}})
    assert state(starting) == {"mark": "running", "label": "starting", "detail": None, "command": None}
