"""`croft status`, `croft schedule status` and the real `croft tick` that follows all tell one story:
the per-asset rows come from the tick's own decision (statusview over schedule.due), so what the two
views call due or held is what the tick then starts or holds."""

from __future__ import annotations

from typing import Any

import pytest
from schedulekit import ISSUES, SUMMARY, croft_json, runs_of, schedule_on, tick

pytestmark = pytest.mark.processes

HOURLY = ISSUES.format(schedule="every hour")
DAILY = ISSUES.format(schedule="daily at 03:00")


def _views(root: Any, now: str) -> tuple[dict[str, Any], dict[str, Any]]:
    # a world no tick keeps fresh is SCHEDULER_STALE (exit 1, issue 21); nothing else may fail
    code, status = croft_json(root, now, "status")
    assert code in (0, 1) and all(
        p["code"] == "SCHEDULER_STALE" for p in status["problems"] if p["severity"] == "error"
    ), status
    code, sched = croft_json(root, now, "schedule", "status")
    assert code in (0, 1) and all(
        p["code"] == "SCHEDULER_STALE" for p in sched["problems"] if p["severity"] == "error"
    ), sched
    blocks = {a["asset"]: a["schedule"] for a in status["data"]["assets"]}
    rows = {r["asset"]: r for r in sched["data"]["assets"]}
    return blocks, rows


def _agree(blocks: dict[str, Any], rows: dict[str, Any]) -> None:
    assert set(blocks) == set(rows)
    for name, row in rows.items():
        block = blocks[name]
        assert row["due"] == block["due"], name
        assert (row["held"] or {}).get("code") == (block["hold"] or {}).get("code"), name
        assert (row["cron"], row["nextFire"], row["lastFire"], row["missedFires"]) == (
            block["cron"],
            block["nextFireAt"],
            block["lastFireAt"],
            block["missedFires"],
        ), name


def test_status_schedule_status_and_the_next_tick_agree(make_project) -> None:  # type: ignore[no-untyped-def]
    root = make_project(
        {
            "assets/issues.py": HOURLY,
            "assets/nightly.py": DAILY,
            "assets/summary.sql": SUMMARY.format(source="issues"),
        },
        timezone="UTC",
    )
    code, ran = croft_json(root, "2026-06-01T09:30:00Z", "run")
    assert code == 0, ran
    (root / "assets" / "fresh.py").write_text(HOURLY)  # nobody ran it: the scheduler must hold it
    schedule_on(root, "2026-06-01T09:31:00Z")

    now = "2026-06-01T13:10:00Z"
    blocks, rows = _views(root, now)
    _agree(blocks, rows)
    assert rows["issues"]["due"] and rows["issues"]["held"] is None and rows["issues"]["missedFires"] == 4
    assert rows["fresh"]["due"] and rows["fresh"]["held"]["code"] == "SCHEDULE_HELD"
    assert rows["fresh"]["held"]["release"] == "croft run fresh"
    assert not rows["nightly"]["due"] and rows["nightly"]["nextFire"] == "2026-06-02T03:00+00:00"
    assert rows["summary"]["due"] and rows["summary"]["held"] is None  # follows issues

    data = tick(root, now)
    ready = sorted(n for n, r in rows.items() if r["due"] and not r["held"] and r["kind"] == "ingest")
    held = sorted(n for n, r in rows.items() if r["due"] and r["held"])
    assert sorted(a for s in data["spawned"] for a in s["assets"]) == ready == ["issues"]
    assert sorted(h["asset"] for h in data["held"]) == held == ["fresh"]
    assert [(r["trigger"], r["status"]) for r in runs_of(root)][-1] == ("schedule", "succeeded")

    # after the run, both views say issues is handled, and a second tick starts nothing
    blocks, rows = _views(root, now)
    _agree(blocks, rows)
    assert not rows["issues"]["due"] and rows["issues"]["lastFire"] == "2026-06-01T13:00+00:00"
    again = tick(root, now)
    assert again["spawned"] == [] and [h["asset"] for h in again["held"]] == ["fresh"]
