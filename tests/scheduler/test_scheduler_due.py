"""The scheduler's policy, as a pure function: every rule shown by handing in facts and moving the clock."""

from __future__ import annotations

from datetime import datetime, timedelta

from croft.core.clock import parse_instant, to_iso
from croft.scheduler.due import AssetInfo, DueInput, FailedStart, due_work
from croft.scheduler.setting import Scheduling

LONDON = "Europe/London"
ON = Scheduling(state="on")


def t(text: str) -> datetime:
    return parse_instant(text)


def ingest(name="issues", schedule="every hour", cron="0 * * * *", code="h1", **kw):
    return AssetInfo(name=name, kind="ingest", schedule=schedule, cron=cron, code_hash=code, **kw)


def sql(name, *inputs, code="s1", **kw):
    return AssetInfo(name=name, kind="sql", inputs=tuple(inputs), code_hash=code, **kw)


def approved(*infos, **extra):
    """schedule_state rows approving each asset's current code, plus extra columns per asset."""
    rows = {i.name: {"approved_code_hash": i.code_hash} for i in infos}
    for name, cols in extra.items():
        rows.setdefault(name, {}).update(cols)
    return rows


def entry(loaded="2026-06-01T09:00:00.000000Z", seen=None, code=None):
    return {
        "lastLoadedAt": loaded,
        "codeHash": code,
        "inputsSeen": {k: {"inputLastLoadedAt": v} for k, v in (seen or {}).items()},
    }


def work(assets, now, *, tz=LONDON, setting=ON, **kw):
    return due_work(DueInput(assets={a.name: a for a in assets}, now=t(now), tz=tz, setting=setting, **kw))


# -- fires ------------------------------------------------------------------------------------------------


def test_an_hourly_ingest_is_due_at_each_fire_and_handled_once():
    a = ingest()
    first = work([a], "2026-06-01T10:05:00Z", state=approved(a))
    assert first.groups == [["issues"]] and first.fires == {"issues": "2026-06-01T10:00:00.000Z"}
    assert first.views["issues"].reason == "fired at 11:00"  # London is UTC+1 in June
    handled = approved(a, issues={"last_fire_at": "2026-06-01T10:00:00.000Z"})
    assert work([a], "2026-06-01T10:30:00Z", state=handled).groups == []
    again = work([a], "2026-06-01T11:00:00Z", state=handled)
    assert again.groups == [["issues"]] and again.views["issues"].reason == "fired at 12:00"


def test_a_run_by_hand_covers_the_fire_before_it_and_downstream_follows():
    a, b = ingest(), sql("summary", "issues")
    state = approved(a, b)
    catalog = {"issues": entry(), "summary": entry(seen={"issues": "2026-06-01T09:00:00.000000Z"})}
    due = work([a, b], "2026-06-01T10:20:00Z", state=state, catalog=catalog)
    assert due.views["summary"].reason == "after issues, which is due" and due.groups == [["issues"]]
    by_hand = work(
        [a, b], "2026-06-01T10:20:00Z", state=state, last_ok={"issues": "2026-06-01T10:10:00.000Z"}
    )
    assert not by_hand.views["issues"].due and by_hand.groups == []


def test_eight_missed_hourly_fires_run_once_with_the_count_in_the_reason():
    a = ingest()
    state = approved(a, issues={"last_fire_at": "2026-06-01T09:00:00.000Z"})
    due = work([a], "2026-06-01T17:10:00Z", state=state)
    assert due.groups == [["issues"]]
    assert due.views["issues"].reason == "fired at 18:00; 8 missed fires run once"
    assert due.views["issues"].missed == 8 and due.fires == {"issues": "2026-06-01T17:00:00.000Z"}


def test_a_clock_moved_backwards_never_runs_a_fire_twice():
    a = ingest()
    state = approved(a, issues={"last_fire_at": "2026-06-01T10:00:00.000Z"})
    for earlier in ("2026-06-01T10:00:00Z", "2026-06-01T09:59:00Z", "2026-06-01T08:30:00Z"):
        assert work([a], earlier, state=state).groups == []


def _daily_dst_day(day_start: str, day_end: str) -> list[str]:
    a = ingest(schedule="daily at 02:30", cron="30 2 * * *")
    state = approved(a)
    state["issues"]["last_fire_at"] = day_start  # the day before's fire was handled
    fired = []
    moment = t(day_start)
    while moment <= t(day_end):
        due = work([a], to_iso(moment), tz="America/Los_Angeles", state=state)
        if due.groups:
            fired.append(due.fires["issues"])
            state["issues"]["last_fire_at"] = due.fires["issues"]
        moment += timedelta(minutes=5)
    return fired


def test_a_daily_0230_fire_runs_exactly_once_on_dst_days():
    # Spring forward in Los Angeles: 02:30 does not exist; it fires once, at 03:00 PDT (10:00Z).
    spring = _daily_dst_day("2026-03-08T08:00:00Z", "2026-03-09T07:00:00Z")
    assert spring == ["2026-03-08T10:00:00.000Z"]
    # Fall back: 01:00-02:00 repeats, 02:30 exists once (PST, 10:30Z).
    fall = _daily_dst_day("2026-11-01T07:00:00Z", "2026-11-02T07:55:00Z")
    assert fall == ["2026-11-01T10:30:00.000Z"]


# -- stale transforms ---------------------------------------------------------------------------------------


def test_a_stale_transform_is_due_with_no_ingest_due():
    a, b = ingest(), sql("summary", "issues")
    state = approved(a, b, issues={"last_fire_at": "2026-06-01T10:00:00.000Z"})
    catalog = {
        "issues": entry("2026-06-01T10:01:00.000000Z"),
        "summary": entry(seen={"issues": "2026-06-01T09:00:00.000000Z"}),
    }
    due = work([a, b], "2026-06-01T10:30:00Z", state=state, catalog=catalog)
    assert due.groups == [["summary"]] and due.fires == {}
    assert due.views["summary"].reason == "stale: input issues has new data"


def test_a_transform_whose_input_was_never_built_waits_for_it():
    a, b = ingest(), sql("summary", "issues")
    state = approved(a, b, issues={"last_fire_at": "2026-06-01T10:00:00.000Z"})
    due = work([a, b], "2026-06-01T10:30:00Z", state=state)
    assert not due.views["summary"].due and due.groups == []


# -- holds ----------------------------------------------------------------------------------------------------


def test_schedule_held_new_edited_not_loading_and_zone_changed_each_say_so():
    now = "2026-06-01T10:20:00Z"
    edited = "2026-06-01T10:07:00.000Z"
    new = work([ingest(edited_at=edited)], now)
    assert new.groups == [] and new.views["issues"].due
    ((name, hold),) = new.held
    assert name == "issues"
    assert hold.code == "SCHEDULE_HELD"
    assert hold.reason == "new: code edited 13 min ago, not run by hand yet; croft run issues releases it"
    assert "croft run issues" in hold.hint

    state = {"issues": {"approved_code_hash": "old"}}
    changed = work([ingest(edited_at=edited)], now, state=state).held[0][1]
    assert changed.reason == "code edited 13 min ago, not run by hand yet; croft run issues releases it"

    broken = work([ingest(edited_at=edited, loads=False)], now, state=state).held[0][1]
    assert broken.reason.endswith("does not load; fix it, then croft run issues releases it")

    moved = ingest(code="in-ny", zone_from="UTC", zone_hash="old")
    zone = work([moved], now, tz="America/New_York", state=state).held[0][1]
    assert zone.reason.startswith("the project time zone changed (UTC → America/New_York)")

    released = work([ingest()], now, state=approved(ingest()))
    assert released.held == [] and released.groups == [["issues"]]


def test_paused_holds_everything_until_the_pause_ends():
    a, b = ingest(), sql("stale_one", "other")
    o = ingest("other", cron=None, schedule=None, code="o")
    state = approved(a, b, o)
    catalog = {"other": entry(), "stale_one": entry(seen={"other": "2026-01-01T00:00:00.000000Z"})}
    paused = Scheduling(state="paused", paused_until="2026-06-01T12:00:00.000Z")
    during = work([a, b, o], "2026-06-01T10:20:00Z", setting=paused, state=state, catalog=catalog)
    assert during.groups == [] and {n for n, _ in during.held} == {"issues", "stale_one"}
    assert during.held[0][1].reason == "scheduling is paused until 13:00; croft schedule on resumes it"
    after = work([a, b, o], "2026-06-01T12:00:00Z", setting=paused, state=state, catalog=catalog)
    assert after.held == [] and after.groups == [["issues"], ["stale_one"]]


def test_a_leased_asset_is_skipped_and_stays_due():
    a = ingest()
    due = work([a], "2026-06-01T10:20:00Z", state=approved(a), leases={"issues": "r_0601_1100_abcd"})
    assert due.groups == [] and due.views["issues"].due
    assert due.held[0][1].reason == "run r_0601_1100_abcd holds it; it stays due"
    assert due.held[0][1].code == "ASSET_BUSY"


def test_a_run_still_starting_holds_its_assets_and_their_readers():
    a, b = ingest(), sql("summary", "issues")
    catalog = {"issues": entry(), "summary": entry(seen={"issues": "2026-01-01T00:00:00.000000Z"})}
    due = work(
        [a, b], "2026-06-01T10:20:00Z", state=approved(a, b), catalog=catalog, starting=[("r_x", ["issues"])]
    )
    assert due.groups == [] and {n for n, _ in due.held} == {"issues", "summary"}
    assert "the scheduled run r_x is starting" in due.held[1][1].reason


def test_a_failed_start_waits_fifteen_minutes_then_runs_once_more():
    a = ingest()
    fail = [FailedStart("r_dead", ("issues",), "2026-06-01T10:00:00.000Z", "its process ended")]
    during = work([a], "2026-06-01T10:14:00Z", state=approved(a), failed_starts=fail)
    assert during.groups == [] and during.held[0][1].code == "SCHEDULE_BACKOFF"
    assert "tries again after 11:15" in during.held[0][1].reason
    assert work([a], "2026-06-01T10:15:00Z", state=approved(a), failed_starts=fail).groups == [["issues"]]


def _failed(
    status, error, started="2026-06-01T10:12:00.000Z", finished="2026-06-01T10:12:05.000Z", code="s1"
):
    return {
        "run_id": "r_1",
        "attempt": 3,
        "status": status,
        "started_at": started,
        "finished_at": finished,
        "error": error,
        "code_hash": code,
        "reason": "stale",
    }


def _stale_summary():
    a, b = ingest(cron=None, schedule=None), sql("summary", "issues")
    state = approved(a, b)
    catalog = {"issues": entry("2026-06-01T10:00:00.000000Z"), "summary": entry(seen={})}
    return [a, b], state, catalog


def test_a_deterministic_failure_waits_for_a_change_to_code_or_inputs():
    assets, state, catalog = _stale_summary()
    latest = {"summary": _failed("failed", {"code": "SQL_ERROR", "message": "no such column"})}
    held = work(assets, "2026-06-02T10:00:00Z", state=state, catalog=catalog, latest=latest)
    assert held.groups == [] and "waits for a change to its code or inputs" in held.held[0][1].reason
    moved = dict(catalog, issues=entry("2026-06-01T11:00:00.000000Z"))
    assert work(assets, "2026-06-02T10:00:00Z", state=state, catalog=moved, latest=latest).groups == [
        ["summary"]
    ]
    new_code = [assets[0], sql("summary", "issues", code="s2")]
    assert work(
        new_code, "2026-06-02T10:00:00Z", state=approved(*new_code), catalog=catalog, latest=latest
    ).groups


def test_a_retryable_failure_or_crash_waits_fifteen_minutes_or_a_longer_retry_after():
    assets, state, catalog = _stale_summary()
    err = {"code": "HTTP_ERROR", "message": "503", "retryable": True}
    latest = {"summary": _failed("failed", err)}
    assert work(assets, "2026-06-01T10:26:00Z", state=state, catalog=catalog, latest=latest).groups == []
    assert work(assets, "2026-06-01T10:27:05Z", state=state, catalog=catalog, latest=latest).groups
    slow = {"summary": _failed("failed", {**err, "details": {"retryAfterMs": 3600_000}})}
    held = work(assets, "2026-06-01T11:00:00Z", state=state, catalog=catalog, latest=slow)
    assert "tries again after 12:12" in held.held[0][1].reason
    crashed = {"summary": _failed("crashed", {"code": "RUN_CRASHED", "message": "x", "retryable": True})}
    assert work(assets, "2026-06-01T10:20:00Z", state=state, catalog=catalog, latest=crashed).groups == []


def test_a_reader_skipped_for_a_held_input_waits_for_it():
    a = ingest(code="edited")
    b = sql("summary", "issues")
    state = {"issues": {"approved_code_hash": "old"}, "summary": {"approved_code_hash": "s1"}}
    catalog = {"issues": entry(), "summary": entry(seen={})}
    skipped = {
        "summary": {
            "run_id": "r_1",
            "attempt": 0,
            "status": "skipped",
            "started_at": "2026-06-01T10:00:00.000Z",
            "reason": "input issues was skipped: held",
        }
    }
    due = work([a, b], "2026-06-01T10:20:00Z", state=state, catalog=catalog, latest=skipped)
    reasons = dict((n, h.reason) for n, h in due.held)
    assert reasons["summary"].startswith("waits for its input issues: SCHEDULE_HELD, ")


# -- groups ---------------------------------------------------------------------------------------------------


def test_independent_pipelines_run_apart_and_ingests_feeding_one_transform_together():
    a, b, c = ingest("a"), ingest("b"), ingest("c")
    ab, c_only = sql("ab", "a", "b"), sql("c_only", "c")
    assets = [a, b, c, ab, c_only]
    due = work(assets, "2026-06-01T10:20:00Z", state=approved(*assets))
    assert due.groups == [["a", "b"], ["c"]]
    assert due.group_reason(["a", "b"]) == "a: fired at 11:00; b: fired at 11:00"


def test_a_reader_waits_with_a_deterministically_failed_input_and_runs_once_it_changes():
    a = ingest(cron=None, schedule=None)
    mid, reader = sql("mid", "issues"), sql("report", "mid")
    state = approved(a, mid, reader)
    catalog = {
        "issues": entry("2026-06-01T10:00:00.000000Z"),
        "mid": entry("2026-06-01T08:00:00.000000Z", seen={"issues": "2026-06-01T07:00:00.000000Z"}),
        "report": entry(seen={}),
    }
    latest = {
        "mid": _failed("failed", {"code": "SQL_ERROR", "message": "boom"}, code="s1"),
        "report": {
            "run_id": "r_1",
            "attempt": 0,
            "status": "skipped",
            "started_at": "2026-06-01T10:12:00.000Z",
            "reason": "input mid failed (r_1)",
        },
    }
    held = dict(
        (n, h)
        for n, h in work(
            [a, mid, reader], "2026-06-01T11:00:00Z", state=state, catalog=catalog, latest=latest
        ).held
    )
    assert held["report"].reason.startswith("waits for its input mid: failed at 11:12 (SQL_ERROR)")
    moved = dict(catalog, issues=entry("2026-06-01T10:30:00.000000Z"))
    again = work([a, mid, reader], "2026-06-01T11:00:00Z", state=state, catalog=moved, latest=latest)
    assert again.held == [] and again.groups == [["mid", "report"]]


def test_large_reprocess_holds_until_a_person_runs_it():
    assets, state, catalog = _stale_summary()
    due = work(
        assets, "2026-06-01T10:20:00Z", state=state, catalog=catalog, large_reprocess=frozenset({"summary"})
    )
    assert due.held[0][1].code == "LARGE_REPROCESS" and "croft run summary" in due.held[0][1].reason
