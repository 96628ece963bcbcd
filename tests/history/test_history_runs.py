"""Runs and steps, the catalog mirror and the scheduler's state in runs.sqlite."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime

import pytest

from croft.core.identity import ProcessIdentity
from croft.core.problems import CroftError, Problem, problem
from croft.history import catalog, runid, runs, state
from croft.history.db import open_history

WHO = ProcessIdentity(pid=4242, start="12345", boot="boot-a")
T0 = "2026-03-08T09:00:00Z"


@pytest.fixture
def clock(monkeypatch):
    """Set CROFT_NOW; returns a setter so a test can move time."""

    def set_now(iso: str) -> None:
        monkeypatch.setenv("CROFT_NOW", iso)

    set_now(T0)
    return set_now


def start_run(conn: sqlite3.Connection, run_id: str = "r_0308_0900_aaaa", **kw) -> str:
    args = {"trigger": "manual", "human": True, "argv": ["run", "orders"], "who": WHO} | kw
    runs.create_run(conn, run_id=run_id, **args)
    return run_id


def start(conn: sqlite3.Connection, run_id: str, asset: str, attempt: int = 1) -> None:
    runs.start_step(
        conn,
        run_id=run_id,
        asset=asset,
        attempt=attempt,
        reason="requested",
        code_hash="h1",
        log_path="x.log",
    )


HTTP_400 = problem("HTTP_ERROR", "GET /items answered 400", "Fix the request.", details={"status": 400})


# -- run ids ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "prefix"),
    [
        # America/New_York springs forward 2026-03-08 07:00Z (02:00 EST -> 03:00 EDT): 09:05Z is 05:05 EDT.
        pytest.param("America/New_York", "r_0308_0505_", id="new-york-after-spring-forward"),
        pytest.param("Europe/London", "r_0308_0905_", id="london"),
        pytest.param("Asia/Tokyo", "r_0308_1805_", id="tokyo"),
    ],
)
def test_run_id_names_the_minute_in_the_project_zone(conn, zone, prefix):
    run_id = runid.new_run_id(datetime(2026, 3, 8, 9, 5, 59, tzinfo=UTC), zone, conn)
    assert run_id.startswith(prefix)
    assert re.fullmatch(r"r_\d{4}_\d{4}_[0-9a-z]{4}", run_id)


def test_run_id_draws_again_when_the_first_is_taken(conn, monkeypatch):
    start_run(conn, "r_0308_0905_aaaa")
    draws = iter("aaaa" + "b7zq")

    class Picker:
        @staticmethod
        def choice(alphabet: str) -> str:
            return next(draws)

    monkeypatch.setattr(runid, "secrets", Picker)
    assert runid.new_run_id(datetime(2026, 3, 8, 9, 5, tzinfo=UTC), "UTC", conn) == "r_0308_0905_b7zq"


# -- runs ------------------------------------------------------------------------------------------------


def test_a_new_run_is_running_since_now_with_its_process_identity(conn, clock):
    run_id = start_run(conn, trigger="schedule", human=False, argv=["run", "--due"])
    run = runs.get_run(conn, run_id)
    assert run == {
        "id": run_id,
        "trigger": "schedule",
        "human": False,
        "argv": ["run", "--due"],
        "pid": 4242,
        "proc_start": "12345",
        "boot_id": "boot-a",
        "started_at": "2026-03-08T09:00:00.000Z",
        "finished_at": None,
        "status": "running",
        "summary": None,
    }


def test_every_time_written_follows_croft_now(tmp_path, clock):
    conn = open_history(tmp_path)
    try:
        clock("2026-03-08T09:00:00Z")
        run_id = start_run(conn)
        start(conn, run_id, "orders")
        clock("2026-03-08T09:01:30.250Z")
        runs.finish_step(conn, run_id=run_id, asset="orders", attempt=1, status="ok")
        runs.record_skipped_step(conn, run_id=run_id, asset="report", reason="input failed", error=None)
        catalog.put_entry(conn, "orders", {"rows": 3})
        clock("1772960700000")  # epoch ms: 2026-03-08T09:05:00Z
        runs.finish_run(conn, run_id, "succeeded", {"ok": True})
        run = runs.get_run(conn, run_id)
        assert run is not None
        assert (run["started_at"], run["finished_at"]) == (
            "2026-03-08T09:00:00.000Z",
            "2026-03-08T09:05:00.000Z",
        )
        steps = {s["asset"]: s for s in runs.list_steps(conn, run_id=run_id)}
        assert steps["orders"]["started_at"] == "2026-03-08T09:00:00.000Z"
        assert steps["orders"]["finished_at"] == "2026-03-08T09:01:30.250Z"
        assert steps["report"]["started_at"] == steps["report"]["finished_at"] == "2026-03-08T09:01:30.250Z"
        refreshed = conn.execute("SELECT refreshed_at FROM catalog").fetchone()[0]
        assert refreshed == "2026-03-08T09:01:30.250Z"
    finally:
        conn.close()


def test_finish_run_ends_a_running_run_once(conn, clock):
    run_id = start_run(conn)
    assert runs.finish_run(conn, run_id, "failed", {"ok": False, "exit": 1}) is True
    clock("2026-03-08T10:00:00Z")
    assert runs.finish_run(conn, run_id, "succeeded", {"ok": True}) is False
    run = runs.get_run(conn, run_id)
    assert run is not None
    assert (run["status"], run["summary"], run["finished_at"]) == (
        "failed",
        {"ok": False, "exit": 1},
        "2026-03-08T09:00:00.000Z",
    )


def test_a_late_finish_never_overwrites_a_crash_verdict(conn, clock):
    run_id = start_run(conn)
    runs.mark_crashed(conn, run_id, problem("RUN_CRASHED", "the run's process is gone", "Run it again."))
    assert runs.finish_run(conn, run_id, "succeeded", {"ok": True}) is False
    assert runs.get_run(conn, run_id)["status"] == "crashed"  # type: ignore[index]


def test_progress_is_recorded_while_running_and_ignored_after_the_end(conn, clock):
    run_id = start_run(conn)
    runs.update_run_summary(conn, run_id, {"progress": {"asset": "orders", "phase": "extract"}})
    assert runs.get_run(conn, run_id)["summary"] == {"progress": {"asset": "orders", "phase": "extract"}}  # type: ignore[index]
    runs.finish_run(conn, run_id, "succeeded", {"ok": True})
    runs.update_run_summary(conn, run_id, {"progress": {"asset": "orders", "phase": "write"}})
    assert runs.get_run(conn, run_id)["summary"] == {"ok": True}  # type: ignore[index]


def test_a_run_is_found_by_a_unique_prefix_and_an_ambiguous_one_is_a_usage_error(conn, clock):
    start_run(conn, "r_0308_0900_aaaa")
    start_run(conn, "r_0308_0900_abcd")
    start_run(conn, "rx0308_0900_zzzz")
    assert runs.get_run(conn, "r_0308_0900_ab")["id"] == "r_0308_0900_abcd"  # type: ignore[index]
    assert runs.get_run(conn, "r_0309") is None
    with pytest.raises(CroftError) as caught:
        runs.get_run(conn, "r_0308_0900_a")
    assert caught.value.code == "USAGE"
    assert "r_0308_0900_aaaa" in caught.value.problem.message
    # '_' is not a wildcard: "r_03" does not reach "rx0308…".
    with pytest.raises(CroftError):
        runs.get_run(conn, "r_03")
    assert runs.get_run(conn, "rx")["id"] == "rx0308_0900_zzzz"  # type: ignore[index]


def test_list_runs_is_newest_first_and_filters_by_asset_failure_and_time(conn, clock):
    for minute, (run_id, asset, status) in enumerate(
        [
            ("r_a", "orders", "succeeded"),
            ("r_b", "orders", "failed"),
            ("r_c", "users", "crashed"),
            ("r_d", "users", "interrupted"),
        ]
    ):
        clock(f"2026-03-08T09:0{minute}:00Z")
        start_run(conn, run_id)
        start(conn, run_id, asset)
        runs.finish_run(conn, run_id, status, {})
    ids = lambda rows: [r["id"] for r in rows]  # noqa: E731
    assert ids(runs.list_runs(conn)) == ["r_d", "r_c", "r_b", "r_a"]
    assert ids(runs.list_runs(conn, asset="orders")) == ["r_b", "r_a"]
    assert ids(runs.list_runs(conn, failed=True)) == ["r_c", "r_b"]
    assert ids(runs.list_runs(conn, since="2026-03-08T10:02:00+01:00")) == ["r_d", "r_c"]
    assert ids(runs.list_runs(conn, since=datetime(2026, 3, 8, 9, 3, tzinfo=UTC))) == ["r_d"]
    assert ids(runs.list_runs(conn, limit=1)) == ["r_d"]


def test_running_runs_lists_only_runs_still_running_oldest_first(conn, clock):
    start_run(conn, "r_old")
    clock("2026-03-08T09:01:00Z")
    start_run(conn, "r_new")
    start_run(conn, "r_done")
    runs.finish_run(conn, "r_done", "succeeded", {})
    assert [r["id"] for r in runs.running_runs(conn)] == ["r_old", "r_new"]


# -- steps -----------------------------------------------------------------------------------------------


def test_a_step_is_running_from_its_start_and_finishes_with_counts(conn, clock):
    run_id = start_run(conn)
    start(conn, run_id, "orders")
    assert runs.latest_step(conn, "orders")["status"] == "running"  # type: ignore[index]
    changed = runs.finish_step(
        conn,
        run_id=run_id,
        asset="orders",
        attempt=1,
        status="ok",
        rows_in=10,
        added=4,
        updated=3,
        unchanged=2,
        deleted=1,
    )
    assert changed is True
    step = runs.latest_step(conn, "orders")
    assert step == {
        "run_id": run_id,
        "asset": "orders",
        "attempt": 1,
        "status": "ok",
        "reason": "requested",
        "started_at": "2026-03-08T09:00:00.000Z",
        "finished_at": "2026-03-08T09:00:00.000Z",
        "rows_in": 10,
        "added": 4,
        "updated": 3,
        "unchanged": 2,
        "deleted": 1,
        "error": None,
        "code_hash": "h1",
        "log_path": "x.log",
    }


def test_finish_step_changes_only_a_running_step(conn, clock):
    run_id = start_run(conn)
    start(conn, run_id, "orders")
    assert runs.finish_step(conn, run_id=run_id, asset="orders", attempt=1, status="failed", error=HTTP_400)
    assert not runs.finish_step(conn, run_id=run_id, asset="orders", attempt=1, status="ok", added=5)
    assert not runs.finish_step(conn, run_id=run_id, asset="orders", attempt=2, status="ok")
    step = runs.latest_step(conn, "orders")
    assert step is not None and (step["status"], step["added"]) == ("failed", 0)


def test_a_step_error_is_stored_as_the_problem_dict_and_read_back_as_a_dict(conn, clock):
    run_id = start_run(conn)
    start(conn, run_id, "orders")
    runs.finish_step(conn, run_id=run_id, asset="orders", attempt=1, status="failed", error=HTTP_400)
    (step,) = runs.list_steps(conn, failed=True)
    assert step["error"] == HTTP_400.to_dict()
    assert Problem.from_dict(step["error"]) == HTTP_400


def test_a_skipped_step_is_attempt_zero_with_its_reason_and_problem(conn, clock):
    run_id = start_run(conn)
    blocked = problem("INPUT_FAILED", "input orders failed (r_0308_0900_aaaa)", "Fix orders first.")
    runs.record_skipped_step(conn, run_id=run_id, asset="report", reason="input orders failed", error=blocked)
    step = runs.latest_step(conn, "report")
    assert step is not None
    assert (step["attempt"], step["status"], step["reason"]) == (0, "skipped", "input orders failed")
    assert step["error"] == blocked.to_dict()
    assert runs.last_ok_step(conn, "report") is None


def test_latest_step_prefers_the_newest_start_then_the_higher_attempt(conn, clock):
    run_id = start_run(conn)
    start(conn, run_id, "orders", attempt=1)
    runs.finish_step(conn, run_id=run_id, asset="orders", attempt=1, status="failed", error=HTTP_400)
    start(conn, run_id, "orders", attempt=2)  # same instant under CROFT_NOW
    assert runs.latest_step(conn, "orders")["attempt"] == 2  # type: ignore[index]
    clock("2026-03-08T09:10:00Z")
    start(conn, "r_next", "orders", attempt=1)
    assert runs.latest_step(conn, "orders")["run_id"] == "r_next"  # type: ignore[index]
    assert runs.latest_step(conn, "nothing") is None


def test_last_ok_step_counts_ok_and_unchanged_but_not_failures(conn, clock):
    for minute, status in enumerate(["ok", "unchanged", "failed"]):
        clock(f"2026-03-08T09:0{minute}:00Z")
        start(conn, f"r_{minute}", "orders")
        runs.finish_step(conn, run_id=f"r_{minute}", asset="orders", attempt=1, status=status)
    assert runs.last_ok_step(conn, "orders")["run_id"] == "r_1"  # type: ignore[index]
    assert runs.latest_step(conn, "orders")["run_id"] == "r_2"  # type: ignore[index]


def test_list_steps_filters_by_asset_run_failure_and_time_newest_first(conn, clock):
    for minute, (run_id, asset, status) in enumerate(
        [
            ("r_a", "orders", "ok"),
            ("r_a", "users", "failed"),
            ("r_b", "orders", "crashed"),
            ("r_b", "users", "interrupted"),
        ]
    ):
        clock(f"2026-03-08T09:0{minute}:00Z")
        start(conn, run_id, asset)
        runs.finish_step(conn, run_id=run_id, asset=asset, attempt=1, status=status)
    keys = lambda rows: [(r["run_id"], r["asset"]) for r in rows]  # noqa: E731
    assert keys(runs.list_steps(conn)) == [
        ("r_b", "users"),
        ("r_b", "orders"),
        ("r_a", "users"),
        ("r_a", "orders"),
    ]
    assert keys(runs.list_steps(conn, asset="orders")) == [("r_b", "orders"), ("r_a", "orders")]
    assert keys(runs.list_steps(conn, run_id="r_a")) == [("r_a", "users"), ("r_a", "orders")]
    assert keys(runs.list_steps(conn, failed=True)) == [("r_b", "orders"), ("r_a", "users")]
    assert keys(runs.list_steps(conn, since="2026-03-08T09:02:00Z", limit=1)) == [("r_b", "users")]


def test_mark_crashed_ends_the_run_and_its_running_steps_with_the_problem(conn, clock):
    run_id = start_run(conn)
    start(conn, run_id, "orders")
    runs.finish_step(conn, run_id=run_id, asset="orders", attempt=1, status="ok")
    start(conn, run_id, "users")
    crash = problem("RUN_CRASHED", "the run's process is gone", "Run it again.", retryable=True)
    clock("2026-03-08T09:30:00Z")
    runs.mark_crashed(conn, run_id, crash)
    run = runs.get_run(conn, run_id)
    assert run is not None and (run["status"], run["finished_at"]) == ("crashed", "2026-03-08T09:30:00.000Z")
    steps = {s["asset"]: s for s in runs.list_steps(conn, run_id=run_id)}
    assert (steps["users"]["status"], steps["users"]["error"]) == ("crashed", crash.to_dict())
    assert (steps["orders"]["status"], steps["orders"]["error"]) == ("ok", None)


def test_a_duplicate_step_row_is_an_internal_error_not_a_sqlite_exception(conn, clock):
    run_id = start_run(conn)
    start(conn, run_id, "orders")
    with pytest.raises(CroftError) as caught:
        start(conn, run_id, "orders")
    assert caught.value.code == "INTERNAL_ERROR"
    assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
    assert not conn.in_transaction


# -- catalog ---------------------------------------------------------------------------------------------


def test_catalog_entries_round_trip_and_are_replaced_whole(conn, clock):
    assert catalog.get_entry(conn, "orders") is None
    catalog.put_entry(conn, "orders", {"rows": 3, "cursor": {"field": "updated_at", "value": "2026-01-01"}})
    catalog.put_entry(conn, "orders", {"rows": 5}, source="preview")
    catalog.put_entry(conn, "users", {"rows": 1})
    assert catalog.get_entry(conn, "orders") == {"rows": 5}
    assert catalog.all_entries(conn) == {"orders": {"rows": 5}, "users": {"rows": 1}}
    assert conn.execute("SELECT source FROM catalog WHERE asset = 'orders'").fetchone()[0] == "preview"
    catalog.delete_entry(conn, "users")
    assert set(catalog.all_entries(conn)) == {"orders"}


# -- schedule state, settings, tick row ------------------------------------------------------------------


def test_put_schedule_state_writes_only_the_columns_it_is_given(conn):
    assert state.get_schedule_state(conn, "orders") is None
    state.put_schedule_state(conn, "orders", file_hash="f1", phrase="every hour", cron="0 * * * *")
    state.put_schedule_state(
        conn,
        "orders",
        last_fire_at=datetime(2026, 3, 8, 9, tzinfo=UTC),
        last_attempt_at="2026-03-08T09:00:05.000Z",
    )
    state.put_schedule_state(conn, "orders", phrase=None, cron=None)
    assert state.get_schedule_state(conn, "orders") == {
        "asset": "orders",
        "phrase": None,
        "cron": None,
        "file_hash": "f1",
        "last_fire_at": "2026-03-08T09:00:00.000Z",
        "last_attempt_at": "2026-03-08T09:00:05.000Z",
        "approved_code_hash": None,
    }
    state.put_schedule_state(conn, "users")
    assert set(state.all_schedule_state(conn)) == {"orders", "users"}


def test_put_schedule_state_refuses_unknown_columns(conn):
    with pytest.raises(AssertionError):
        state.put_schedule_state(conn, "orders", last_fire="x")


def test_settings_hold_json_and_fall_back_to_the_default(conn):
    assert state.get_setting(conn, "scheduling", {"state": "off"}) == {"state": "off"}
    state.put_setting(conn, "scheduling", {"state": "on", "via": "os-job"})
    state.put_setting(conn, "schedule.spawned", [])
    state.put_setting(conn, "scheduling", {"state": "paused", "via": "os-job", "pausedUntil": None})
    assert state.get_setting(conn, "scheduling") == {"state": "paused", "via": "os-job", "pausedUntil": None}
    assert state.get_setting(conn, "schedule.spawned", None) == []
    state.delete_setting(conn, "schedule.spawned")
    assert state.get_setting(conn, "schedule.spawned") is None


def test_the_tick_row_keeps_one_heartbeat(conn):
    assert state.read_tick(conn) is None
    state.write_tick(conn, WHO, "2026-03-08T09:00:00.000Z")
    state.write_tick(conn, WHO, "2026-03-08T09:01:00.000Z")
    assert state.read_tick(conn) == {
        "pid": 4242,
        "proc_start": "12345",
        "boot_id": "boot-a",
        "heartbeat_at": "2026-03-08T09:01:00.000Z",
    }
    assert conn.execute("SELECT count(*) FROM tick").fetchone()[0] == 1
