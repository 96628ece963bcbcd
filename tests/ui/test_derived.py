"""The one place the page derives a row's state from croft's JSON: each state, and which one wins."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from croft.ui.derived import derived_state

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
ROOT = "/p"


def asset(**kw: Any) -> dict[str, Any]:
    return {"asset": "orders", "kind": "ingest", "stale": False, "staleReasons": [], "problems": [], **kw}


def last(status: str, at: str = "2026-03-02T09:58:00Z", **kw: Any) -> dict[str, Any]:
    return {"runId": "r_1", "at": at, "status": status, "attempt": 1, "code": None, "message": None, **kw}


def held(code: str = "SCHEDULE_HELD", reason: str = "its code changed since a person last ran it") -> Any:
    return {"hold": {"code": code, "kind": "hold", "reason": reason, "until": None, "hint": ""}}


def state(a: dict[str, Any], waiting: Any = ()) -> dict[str, Any]:
    return derived_state(a, list(waiting), ROOT, NOW)


def test_never_run_ok_and_stale() -> None:
    assert state(asset(lastRun=None))["mark"] == "never"
    assert state(asset(lastRun=last("ok")))["mark"] == "ok"
    stale = state(asset(lastRun=last("ok"), stale=True, staleReasons=[{"text": "input x has new data"}]))
    assert stale["mark"] == "stale" and stale["detail"] == "input x has new data"
    assert stale["command"] == "croft run orders"


def test_running_says_for_how_long() -> None:
    s = state(asset(lastRun=last("running", at="2026-03-02T09:59:20Z")))
    assert s == {"mark": "running", "label": "running 40 s", "detail": None, "command": None}


def test_a_failure_says_its_streak_in_words() -> None:
    a = asset(
        lastRun=last("failed", code="HTTP_ERROR", message="500 from the shop"),
        failing={"count": 3, "since": "2026-03-02T08:00:00Z"},
    )
    three = state(a)
    assert three["mark"] == "failed" and three["label"] == "failed 3 times in a row"
    assert three["detail"] == "500 from the shop" and three["command"] == "croft logs orders --failed"
    assert state(asset(lastRun=last("failed")))["label"] == "failed once"


def test_a_skipped_transform_whose_input_failed_is_not_green() -> None:
    s = state(asset(kind="sql", lastRun=last("skipped", message="its input orders failed")))
    assert s["mark"] == "skipped" and s["detail"] == "its input orders failed"
    assert s["command"] == "croft run orders"


def test_retrying_at_comes_from_the_backoff_hold() -> None:
    hold = {
        "code": "SCHEDULE_BACKOFF",
        "reason": "failed at 09:58; tries again after 10:13",
        "until": "2026-03-02T10:13:00Z",
    }
    s = state(asset(lastRun=last("failed"), schedule={"hold": hold}))
    assert (
        s["mark"] == "retrying" and s["label"].startswith("retrying at 10:13") and "in 13 min" in s["label"]
    )


def test_waiting_for_a_slot_is_this_projects_group_in_the_queue() -> None:
    mine = [{"root": ROOT, "assets": ["orders"], "fire": "2026-03-02T10:00:00Z"}]
    theirs = [{"root": "/other", "assets": ["orders"], "fire": "2026-03-02T10:00:00Z"}]
    assert state(asset(lastRun=last("ok")), waiting=mine)["mark"] == "waiting"
    assert state(asset(lastRun=last("ok")), waiting=theirs)["mark"] == "ok"


def test_held_for_a_person_names_the_command_that_releases_it_and_beats_a_failure() -> None:
    s = state(asset(lastRun=last("failed"), schedule=held()))
    assert s == {
        "mark": "held",
        "label": "held: code not yet run by a person",
        "detail": "its code changed since a person last ran it",
        "command": "croft run orders",
    }
    busy = asset(lastRun=last("ok"), schedule=held("ASSET_BUSY", "run r_2 holds it"))
    assert state(busy)["mark"] == "ok"  # passes by itself: no mark


def test_running_wins_over_everything() -> None:
    assert state(asset(lastRun=last("running"), schedule=held()))["mark"] == "running"


def test_an_invalid_asset_says_its_problem() -> None:
    bad = {"code": "SCHEDULE_INVALID", "message": "orders: 'every blue moon' is no schedule"}
    s = state(asset(lastRun=None, problems=[bad]))
    assert s["mark"] == "invalid" and s["command"] == "croft validate"


def test_status_own_fields_win_the_streak_the_retry_and_a_start() -> None:
    """``failing``, ``lastRun.retryAt`` and a hold of kind ``starting`` are croft status's own facts
    (the terminal reads them too): the page takes them over anything it could count itself."""
    failing = asset(lastRun=last("failed"), failing={"count": 6, "since": "2026-03-02T09:00:00Z"})
    assert state(failing)["label"] == "failed 6 times in a row"
    retry = state(asset(lastRun=last("failed", retryAt="2026-03-02T10:02:00Z", message="500")))
    assert retry["mark"] == "retrying" and "retrying at" in retry["label"] and retry["detail"] == "500"
    starting = asset(lastRun=last("ok"), schedule={"hold": {"kind": "starting", "code": "ASSET_BUSY"}})
    assert state(starting) == {"mark": "running", "label": "starting", "detail": None, "command": None}


def test_a_table_dropped_outside_croft_says_so_with_its_own_fix() -> None:
    gone = {
        "code": "TABLE_MISSING",
        "message": "orders: its table is gone from the warehouse",
        "fix": "croft run orders --full-refresh",
    }
    s = state(asset(lastRun=last("ok"), problems=[gone]))
    assert s["mark"] == "invalid" and s["label"] == "table missing"
    assert s["command"] == "croft run orders --full-refresh"
