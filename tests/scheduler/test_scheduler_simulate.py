"""The flight plan as a pure function: the due policy replayed on a moved clock, with queue waits, pools,
holds, pauses and quiet hours, each shown by handing in facts."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

from croft.core.clock import parse_instant
from croft.schedule import cron
from croft.schedule.jitter import jitter_delay
from croft.scheduler.due import AssetInfo, DueInput
from croft.scheduler.setting import Scheduling
from croft.scheduler.simulate import SimInput, plan_json, simulate

ON = Scheduling(state="on")
START = "2026-06-01T10:00:00Z"


def t(text: str) -> datetime:
    return parse_instant(text)


def ingest(name: str, text: str = "0 * * * *", code: str = "h", **kw: Any) -> AssetInfo:
    spec = cron.parse_cron(text)
    return AssetInfo(name=name, kind="ingest", schedule=text, cron=text, code_hash=code, spec=spec, **kw)


def given(*infos: AssetInfo, approved: tuple[str, ...] | None = None, **kw: Any) -> DueInput:
    names = approved if approved is not None else tuple(i.name for i in infos)
    state = {i.name: {"approved_code_hash": i.code_hash} for i in infos if i.name in names}
    last_ok = {i.name: "2026-06-01T09:59:00.000Z" for i in infos}  # a run by hand just before
    return DueInput({i.name: i for i in infos}, t(START), "UTC", ON, state=state, last_ok=last_ok, **kw)


def sim(facts: DueInput, hours: float, cap: int = 4, **kw: Any) -> SimInput:
    return SimInput(given=facts, until=t(START) + timedelta(hours=hours), cap=cap, durations={}, **kw)


def starts(s: SimInput) -> list[tuple[str, str]]:
    return sorted((r.start[11:16], a) for r in simulate(s).runs for a in r.assets)


def test_each_fire_starts_at_its_minute_and_what_a_run_by_hand_covered_does_not():
    s = sim(given(ingest("hourly"), ingest("quarter", "*/15 * * * *")), hours=1)
    assert starts(s) == [
        ("10:00", "hourly"),
        ("10:00", "quarter"),
        ("10:15", "quarter"),
        ("10:30", "quarter"),
        ("10:45", "quarter"),
        ("11:00", "hourly"),
        ("11:00", "quarter"),
    ]


def test_the_cap_makes_a_queue_and_a_freed_slot_starts_the_next_group_at_once():
    facts = given(ingest("a"), ingest("b"), ingest("c"))
    s = SimInput(facts, t(START) + timedelta(minutes=30), {"a": 150, "b": 150, "c": 30}, 1)
    runs = simulate(s).runs
    assert [(r.assets, r.start[11:19], r.waited_s) for r in runs] == [
        (("a",), "10:00:00", 0),
        (("b",), "10:02:30", 150),
        (("c",), "10:05:00", 300),
    ]
    assert "waited 2 min for a slot or its pool" in runs[1].why


def test_a_pool_of_one_never_lets_two_of_it_run_at_once():
    pool_of = {"a": "api", "b": "api"}
    facts = given(ingest("a"), ingest("b"))
    s = SimInput(facts, t(START) + timedelta(hours=2, minutes=5), {"a": 90, "b": 90}, 4, {"api": 1}, pool_of)
    spans = sorted((r.start, r.end) for r in simulate(s).runs)
    assert len(spans) == 6
    assert all(end <= later for (_, end), (later, _) in itertools.pairwise(spans))


def test_a_held_asset_never_starts_and_the_plan_counts_the_fires_it_holds():
    found = simulate(sim(given(ingest("held"), ingest("ok"), approved=("ok",)), hours=2))
    assert {a for r in found.runs for a in r.assets} == {"ok"}
    [hold] = found.holds
    assert (hold["asset"], hold["code"], hold["fires"]) == ("held", "SCHEDULE_HELD", 3)


def test_quiet_hours_run_their_fires_once_at_the_window_end_and_a_pause_at_its_end():
    pauses = {"paused": {"since": START, "until": "2026-06-01T11:20:00.000Z"}}
    s = sim(given(ingest("night", quiet=("10:30-12:10",)), ingest("paused"), pauses=pauses), hours=3)
    assert starts(s) == [
        ("10:00", "night"),
        ("11:20", "paused"),
        ("12:00", "paused"),
        ("12:10", "night"),
        ("13:00", "night"),
        ("13:00", "paused"),
    ]
    found = simulate(s)
    assert [d["fire"][11:16] for d in found.deferred] == ["11:00", "12:00"]
    data = plan_json(found, s)
    assert data["assumed"]["runSeconds"] == {"night": 30.0, "paused": 30.0}


def test_a_jittered_fire_starts_at_the_first_tick_after_its_release():
    found = simulate(sim(given(ingest("spread", jitter_s=600)), hours=3))
    for run in found.runs:
        fire = t(run.fires["spread"])
        released = fire + jitter_delay("spread", fire, 600, fire + timedelta(hours=1))
        tick = released.replace(second=0, microsecond=0)
        tick += timedelta(minutes=0 if tick == released else 1)
        assert (t(run.released), t(run.start)) == (released, tick)
    assert len(found.runs) == 3  # 10:00, 11:00, 12:00: the 13:00 fire's release is past the plan's end
