"""The alert options read from the decorator, the SQL header and croft.json by one set of rules, and the
policy that lets an asset's own option win over the project's."""

from __future__ import annotations

from croft.core.clock import parse_instant
from croft.notify.policy import Policy
from croft.notify.streaks import on_failures, on_successes
from croft.project.config import load_project
from croft.project.discovery import discover
from croft.scheduler.freshness import assess, references


def test_options_from_decorator_header_and_croft_json_and_the_asset_wins(make_project):
    root = make_project(
        {
            "assets/orders.py": """
                from croft import ingest


                @ingest(key="id", notify_after=4, notify_remind="never", run_ping="HC_ORDERS", fresh_within="6h")
                def rows(ctx):
                    yield {"id": 1}
                """,
            "assets/summary.sql": "-- key: id\n-- notify after: 2\n-- notify remind: 30m\n-- fresh within: 1 day\n"
            "-- note this: a plain comment\nSELECT id FROM orders\n",
            "assets/plain.py": """
                from croft import ingest


                @ingest(key="id")
                def rows(ctx):
                    yield {"id": 1}
                """,
        },
        notify={"after": 3, "remind": "2h", "runPing": "https://hc-ping.com/abc"},
    )
    project = load_project(root)
    facts, problems = discover(project)
    assert [p for f in facts.values() for p in f.problems] == [] and problems == []
    assert facts["orders"].fresh_within_s == 6 * 3600 and facts["summary"].fresh_within_s == 86400
    policy = Policy(project, facts)
    assert [policy.after(a) for a in ("orders", "summary", "plain")] == [4, 2, 3]
    assert [policy.remind(a) for a in ("orders", "summary", "plain")] == [None, 1800, 7200]
    assert (policy.run_ping("orders"), policy.run_ping("plain"), policy.run_ping(None)) == (
        "HC_ORDERS",
        None,
        "https://hc-ping.com/abc",
    )


def test_croft_json_refuses_bad_alert_values_naming_the_key(make_project):
    import pytest

    from croft.core.problems import CroftError

    root = make_project(
        {}, notify={"after": 0, "remind": "sometimes", "runPing": "ftp://x", "urls": "ntfy://x"}
    )
    with pytest.raises(CroftError) as caught:
        load_project(root)
    keys = [p.details["key"] for p in [caught.value.problem, *caught.value.extra]]
    assert keys == ["notify.after", "notify.remind", "notify.runPing", "notify.urls"]


def test_the_streak_rule_tells_at_the_nth_failure_and_reminds_by_the_interval():
    at = parse_instant("2026-06-01T09:00:00Z")
    rule = lambda _asset: (3, 7200.0)  # noqa: E731
    streaks, told = {}, []
    for hour in range(6):
        streaks, now_told, _ = on_failures(streaks, ["a"], at.replace(hour=9 + hour), rule)
        told.append(bool(now_told))
    assert told == [False, False, True, False, True, False]  # 11:00, then 13:00 (2 h later)
    assert on_successes(streaks, ["a"])[1] == [("a", 6)]
    untold, _, _ = on_failures({}, ["a"], at, rule)
    assert on_successes(untold, ["a"]) == ({}, [])  # never told, so its end is no news


def test_a_transform_follows_its_oldest_ingest_unless_stale():
    kinds = {"a": "ingest", "b": "ingest", "t": "sql", "u": "sql"}
    inputs = {"t": ("a", "b"), "u": ("t",)}
    last_ok = {"a": "2026-06-01T10:00:00.000Z", "b": "2026-06-01T08:00:00.000Z", "t": "2026-06-01T10:30:00.000Z",
               "u": "2026-06-01T10:40:00.000Z"}  # fmt: skip
    refs = references(kinds, inputs, last_ok, stale=set())
    assert refs["t"] == ("2026-06-01T08:00:00.000Z", "b") and refs["u"] == ("2026-06-01T08:00:00.000Z", "b")
    stale = references(kinds, inputs, last_ok, stale={"t"})
    assert stale["t"] == ("2026-06-01T10:30:00.000Z", None) and stale["u"][0] == "2026-06-01T10:30:00.000Z"
    fresh = assess({"t": 3 * 3600}, refs, parse_instant("2026-06-01T11:00:00Z"))["t"]
    assert fresh.breached and fresh.breach_at == "2026-06-01T11:00:00.000Z"
