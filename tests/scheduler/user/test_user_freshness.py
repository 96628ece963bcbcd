"""Freshness promises over real ``croft tick --all`` processes on a moved clock: each cause (held, paused,
failing, scheduling off, no tick) breaches at the right minute and is told once; "fresh again" is told
once; a transform's age follows the ingest it reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from schedulekit import croft_json, env_at, tick, wait_for_runs

from croft.core.clock import parse_instant
from croft.history.db import open_history
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes

INGEST = """
import os

from croft import ingest


@ingest(schedule="{schedule}", key="id", fresh_within="2h")
def rows(ctx):
    if os.path.exists(os.path.join(os.path.dirname(__file__), "..", "BROKEN")):
        raise RuntimeError("the source is down")
    yield {{"id": 1}}
"""


def tick_all(now: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "croft", "tick", "--all", "--json"],
        env=env_at(now),
        capture_output=True,
        text=True,
        timeout=120,
    )
    envelope = json.loads(out.stdout)
    return envelope


def settled(root: Path, now: str) -> None:
    """Until the project tick that ``tick --all`` started at ``now`` (when scheduling is on) has beaten
    and its runs have ended: the next minute's watch must not find this one's tick still starting."""
    from waiting import wait_for

    from croft.scheduler import heartbeat
    from croft.scheduler.setting import effective_state, read_scheduling_file

    if effective_state(read_scheduling_file(root / ".croft"), parse_instant(now)) == "on":
        stamp = parse_instant(now).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        wait_for(lambda: heartbeat.last_heartbeat(root / ".croft") == stamp, f"the project tick of {now}")
    wait_for_runs(root)


def notes(root: Path, kind: str = "desktop") -> list[dict]:
    path = root / ".croft/logs/notifications.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["kind"] == kind and r["event"] in ("freshness", "fresh")]


def project(make_project, schedule: str = "every day at 06:00", **config: object) -> Path:  # type: ignore[no-untyped-def]
    """An ingest run by hand at 10:05 (its data reflects 10:05: the promise breaks at 12:05), registered."""
    root = make_project({"assets/orders.py": INGEST.format(schedule=schedule)}, timezone="UTC", **config)
    code, ran = croft_json(root, "2026-06-01T10:05:00Z", "run")
    assert code == 0, ran
    Registry().add(root, "os-job", parse_instant("2026-06-01T10:05:30Z"))
    return root  # type: ignore[no-any-return]


def setting_to(root: Path, state: str, at: str, until: str | None = None) -> None:
    conn = open_history(root / ".croft")
    try:
        write_scheduling(
            conn,
            state,  # type: ignore[arg-type]
            parse_instant(at),
            via="os-job",
            paused_until=parse_instant(until) if until else None,
        )
    finally:
        conn.close()


def breaches_at_1205_once(root: Path, cause: str) -> dict:
    tick_all("2026-06-01T12:04:00Z")
    settled(root, "2026-06-01T12:04:00Z")
    assert notes(root) == [], "broke a minute early"
    tick_all("2026-06-01T12:05:00Z")
    settled(root, "2026-06-01T12:05:00Z")
    [told] = notes(root)
    assert told["event"] == "freshness" and told["body"].startswith("orders is older than promised"), told
    tick_all("2026-06-01T12:06:00Z")
    settled(root, "2026-06-01T12:06:00Z")
    assert len(notes(root)) == 1, "told twice"
    _code, status = croft_json(root, "2026-06-01T12:06:30Z", "status")
    fresh = status["data"]["freshness"]["orders"]
    assert fresh["breached"] is True and fresh["cause"]["code"] == cause, fresh
    assert fresh["breachAt"] == "2026-06-01T12:05:00.000Z"
    return told


def test_paused_breaches_at_its_minute_once_and_fresh_again_once(make_project):
    root = project(make_project)
    setting_to(root, "paused", "2026-06-01T10:06:00Z", until="2026-06-02T10:00:00Z")
    told = breaches_at_1205_once(root, "paused")
    assert (
        "because scheduling is paused until 2026-06-02T10:00:00.000Z. Fix: croft schedule on" in told["body"]
    )
    code, ran = croft_json(root, "2026-06-01T12:30:00Z", "run")  # a person refreshes it
    assert code == 0, ran
    tick_all("2026-06-01T12:31:00Z")
    tick_all("2026-06-01T12:32:00Z")
    assert [n["event"] for n in notes(root)] == ["freshness", "fresh"]
    assert notes(root)[1]["body"].startswith("orders is fresh again: its data is 1 min old")


def test_scheduling_off_breaches_and_tells_once(make_project):
    root = project(make_project)
    setting_to(root, "off", "2026-06-01T10:06:00Z")
    told = breaches_at_1205_once(root, "scheduling_off")
    assert "because scheduling is off for this project" in told["body"]


def test_held_breaches_and_tells_once(make_project):
    root = project(make_project, schedule="every hour")
    setting_to(root, "on", "2026-06-01T10:06:00Z")
    # an edit nobody ran: the 11:00 and 12:00 fires are held
    source = root / "assets/orders.py"
    source.write_text(source.read_text().replace('{"id": 1}', '{"id": 2}'))
    for minute in ("11:00", "11:30", "12:00"):
        tick_all(f"2026-06-01T{minute}:00Z")
        settled(root, f"2026-06-01T{minute}:00Z")
    told = breaches_at_1205_once(root, "held")
    assert "orders is held" in told["body"] and "Fix: croft run orders" in told["body"]


def failures(root: Path) -> list[dict]:
    path = root / ".croft/logs/notifications.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["kind"] == "desktop" and r["event"] == "failed"]


def test_a_failing_breach_is_one_alert_with_the_failure_it_comes_from(make_project):
    """One cause, one alert: the failure the run told at 11:00 is not told again as a breach at 12:05
    (the two once went out seconds apart); its reminder period is shared."""
    root = project(make_project, schedule="every hour", notify={"remind": "1h"})
    setting_to(root, "on", "2026-06-01T10:06:00Z")
    (root / "BROKEN").write_text("")
    tick(root, "2026-06-01T11:00:30Z")
    assert len(failures(root)) == 1  # the run's own notice
    tick_all("2026-06-01T12:05:00Z")  # the promise breaks: because it fails, which was told at 11:00
    settled(root, "2026-06-01T12:05:00Z")
    told = notes(root) + failures(root)
    # 12:05 is past the hour since the 11:00 notice: one alert, a reminder, by one of the two
    assert len(told) == 2, told
    tick_all("2026-06-01T12:06:00Z")
    settled(root, "2026-06-01T12:06:00Z")
    assert len(notes(root) + failures(root)) == 2, "one cause told twice within its reminder period"
    _code, status = croft_json(root, "2026-06-01T12:06:30Z", "status")
    assert status["data"]["freshness"]["orders"]["cause"]["code"] == "failing"


def test_a_failing_breach_within_the_failures_period_is_not_told_again(make_project):
    root = project(make_project, schedule="every hour")  # remind: a day
    setting_to(root, "on", "2026-06-01T10:06:00Z")
    (root / "BROKEN").write_text("")
    tick(root, "2026-06-01T11:00:30Z")
    tick(root, "2026-06-01T12:00:30Z")
    assert len(failures(root)) == 1  # told at 11:00; the 12:00 failure is the same streak
    for minute in ("04", "05", "06"):
        tick_all(f"2026-06-01T12:{minute}:00Z")
        settled(root, f"2026-06-01T12:{minute}:00Z")
    assert notes(root) == [], "the breach repeated the failure told an hour ago"
    _code, status = croft_json(root, "2026-06-01T12:06:30Z", "status")
    fresh = status["data"]["freshness"]["orders"]
    assert fresh["breached"] is True and fresh["cause"]["code"] == "failing"  # shown, not told twice


def test_no_tick_is_not_told_by_the_tick_that_starts_the_catch_up_run(make_project):
    root = project(make_project, schedule="every hour")
    setting_to(root, "on", "2026-06-01T10:06:00Z")
    tick(root, "2026-06-01T10:07:00Z")  # the last project tick: nothing ticks it for two hours
    tick_all("2026-06-01T12:05:00Z")  # the laptop wakes: this minute starts the catch-up run
    settled(root, "2026-06-01T12:05:00Z")
    tick_all("2026-06-01T12:06:00Z")
    settled(root, "2026-06-01T12:06:00Z")
    assert notes(root) == []  # the catch-up run made it fresh: nothing to tell, and nothing was
    _code, status = croft_json(root, "2026-06-01T12:06:30Z", "status")
    assert status["data"]["freshness"]["orders"]["breached"] is False


def test_a_transform_age_follows_its_ingest(make_project):
    root = make_project(
        {
            "assets/orders.py": INGEST.format(schedule="every day at 06:00").replace(
                ', fresh_within="2h"', ""
            ),
            "assets/summary.sql": "-- key: id\n-- fresh within: 3h\nSELECT id FROM orders\n",
        },
        timezone="UTC",
    )
    code, ran = croft_json(root, "2026-06-01T10:05:00Z", "run", "orders")
    assert code == 0, ran
    code, ran = croft_json(root, "2026-06-01T10:45:00Z", "run", "summary")  # built 40 min later
    assert code == 0, ran
    Registry().add(root, "os-job", parse_instant("2026-06-01T10:46:00Z"))
    setting_to(root, "paused", "2026-06-01T10:46:00Z", until="2026-06-03T00:00:00Z")
    tick_all("2026-06-01T13:04:00Z")
    assert notes(root) == []
    tick_all("2026-06-01T13:05:00Z")  # 3 h after orders' data, not after summary's own build
    [told] = notes(root)
    assert told["body"].startswith("summary is older than promised: its data is 3 h old (fresh within 3 h)")
    code, status = croft_json(root, "2026-06-01T13:06:00Z", "status")
    assert status["data"]["freshness"]["summary"]["follows"] == "orders"
