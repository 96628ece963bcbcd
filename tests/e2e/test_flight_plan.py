"""The flight plan against the real thing: ``croft schedule simulate --days 2`` predicts exactly the run
starts (same assets, same minutes) that two days of real ticks on a moved clock then make.

The six ingests of ``flightkit`` fire together at most full hours, so the per-user cap of 2 makes queue
waits, and two of them share a pool of 1. Every one of the 2,881 minutes is ticked: the project tick is
called in-process (as the tick tests do) at each ``CROFT_NOW`` minute, and every run it starts is a real
detached process.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from flightkit import APPROVED_AT, ASSETS, CONFIG, START, edit_held, files
from schedulekit import croft_json, query, schedule_on, wait_for_runs

from croft.core.clock import parse_instant, to_iso
from croft.project.config import load_project
from croft.scheduler.tick.project_tick import project_tick


def test_simulate_predicts_the_run_starts_of_two_days_of_real_ticks(
    make_project, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    root = make_project(files(), **CONFIG)
    code, ran = croft_json(root, APPROVED_AT, "run")
    assert code == 0, ran
    edit_held(root)
    schedule_on(root, APPROVED_AT)

    began = time.perf_counter()
    plan = subprocess.run(
        [sys.executable, "-m", "croft", "schedule", "simulate", "--days", "2", "--json"],
        cwd=root,
        env={**os.environ, "CROFT_NOW": START},
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.perf_counter() - began
    data = json.loads(plan.stdout)["data"]
    predicted = sorted((a, r["startAt"][:16]) for r in data["runs"] for a in r["assets"])
    assert [h["asset"] for h in data["holds"]] == ["held"]
    assert any(d["asset"] == "daily" and d["kind"] != "gap" for d in data["dst"])
    assert data["deferred"] and all(d["asset"] == "night" for d in data["deferred"])
    spread = [r for r in data["runs"] if "spread" in r["assets"]]
    assert all(any(w.startswith("spread: jitter") for w in r["why"]) for r in spread)
    assert any(r["startAt"][:16] != r["fires"]["spread"][:16] for r in spread)
    pooled = sorted(
        (r["startAt"], r["endsAt"]) for r in data["runs"] if {"hourly", "quarter"} & set(r["assets"])
    )
    assert all(end <= later for (_, end), (later, _) in itertools.pairwise(pooled))  # the pool of 1 holds
    assert any(
        any("slot or its pool" in w for w in r["why"])
        for r in data["runs"]
        if {"hourly", "quarter"} & set(r["assets"])
    )
    print(f"simulate --days 2 took {took:.2f} s (a process, its imports included)")

    project = load_project(root)
    start = parse_instant(START)
    for minute in range(2 * 24 * 60 + 1):
        now = start + timedelta(minutes=minute)
        monkeypatch.setenv("CROFT_NOW", to_iso(now))
        data_tick, _ = project_tick(project, now, ping=False)
        if data_tick["spawned"]:
            wait_for_runs(root)
    rows = query(
        root,
        "SELECT s.asset, r.started_at FROM runs r JOIN steps s ON s.run_id = r.id"
        " WHERE r.trigger = 'schedule' AND s.status IN ('ok', 'unchanged')",
    )
    happened = sorted((r["asset"], r["started_at"][:16]) for r in rows if r["asset"] in ASSETS)
    assert happened == predicted
    assert not [a for a, _ in happened if a == "held"]
    dailies = [m for a, m in happened if a == "daily"]
    assert len(dailies) == 2  # the repeated 01:30 ran once
    london = ZoneInfo("Europe/London")
    nights = [
        parse_instant(m + ":00Z").astimezone(london).strftime("%H:%M") for a, m in happened if a == "night"
    ]
    assert nights.count("06:00") == 2 and not [m for m in nights if m >= "22:00" or m < "06:00"]
    assert took < 10  # a process on a loaded machine; the 2 s budget is measured by scripts/bench
