"""notify.after and notify.remind over real ``croft tick`` / ``croft run --due`` processes on a moved
clock: told at the Nth failure in a row only, reminded after the interval and not before, recovered once,
and an asset's own notify_after / notify_remind win over croft.json's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from schedulekit import croft_json, schedule_on, tick

pytestmark = pytest.mark.processes

FLAKY = """
import os

from croft import ingest


@ingest(schedule="every hour", key="id"{extra})
def rows(ctx):
    if os.path.exists(os.path.join(os.path.dirname(__file__), "..", "BROKEN")):
        raise RuntimeError("the source is down")
    yield {{"id": 1}}
"""


def told(root: Path) -> list[dict]:
    path = root / ".croft/logs/notifications.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["kind"] == "desktop"]


def test_after_three_tells_at_the_third_failure_reminds_after_two_hours_and_recovers_once(make_project):
    root = make_project(
        {
            "assets/orders.py": FLAKY.format(extra=""),
            # its own rule wins over the project's: told at the 2nd failure, never reminded
            "assets/items.py": FLAKY.format(extra=', notify_after=2, notify_remind="never"'),
        },
        timezone="UTC",
        notify={"after": 3, "remind": "2h"},
    )
    code, ran = croft_json(root, "2026-06-01T08:30:00Z", "run")  # by hand: approves both for the scheduler
    assert code == 0, ran
    schedule_on(root, "2026-06-01T08:31:00Z")
    (root / "BROKEN").write_text("")

    def at(hour: str) -> list[str]:
        tick(root, f"2026-06-01T{hour}:00:30Z")
        return [n["body"] for n in told(root)]

    assert at("09") == []  # first failure of each: below both thresholds
    [second] = at("10")
    assert second.startswith("items failed 2 scheduled runs in a row: ASSET_CODE_ERROR: items: RuntimeError")
    assert second.endswith("See it with: croft logs items --failed")
    third = at("11")
    assert len(third) == 2 and third[1].startswith(
        "orders failed 3 scheduled runs in a row: ASSET_CODE_ERROR"
    )
    assert len(at("12")) == 2  # one hour since orders was told: not yet; items never reminds
    fifth = at("13")  # two hours since: orders is reminded, items is not
    assert len(fifth) == 3 and fifth[2].startswith("orders still fails in scheduled runs (5 in a row)")
    assert len(at("14")) == 3

    (root / "BROKEN").unlink()
    at("15")
    recovered = sorted(n["body"] for n in told(root) if n["event"] == "recovered")
    assert recovered == [  # each in its own run (one group per ingest)
        "items succeeded again after 6 failed scheduled runs. See it with: croft logs items",
        "orders succeeded again after 6 failed scheduled runs. See it with: croft logs orders",
    ]
    count = len(told(root))
    at("16")
    assert len(told(root)) == count  # recovered once


def test_a_streak_that_ends_before_its_threshold_is_never_told(make_project):
    root = make_project({"assets/orders.py": FLAKY.format(extra=", notify_after=3")}, timezone="UTC")
    code, ran = croft_json(root, "2026-06-01T08:30:00Z", "run")
    assert code == 0, ran
    schedule_on(root, "2026-06-01T08:31:00Z")
    (root / "BROKEN").write_text("")
    tick(root, "2026-06-01T09:00:30Z")
    tick(root, "2026-06-01T10:00:30Z")
    (root / "BROKEN").unlink()
    tick(root, "2026-06-01T11:00:30Z")
    assert told(root) == []  # two failures, then a success: neither a failure nor a recovery is news
