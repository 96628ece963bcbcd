"""The slow-run rule alone: which running steps have passed their asset's ``slow_after`` (pure)."""

from __future__ import annotations

from croft.core.clock import parse_instant
from croft.notify.message import slow_message
from croft.scheduler.tick.slow import Slow, slow_steps

NOW = parse_instant("2026-06-01T10:10:00Z")


def test_a_step_is_slow_from_its_bound_on_and_not_a_second_before():
    running = [
        ("r1", "feed", "2026-06-01T10:00:00Z"),  # 10 min: at its bound
        ("r1", "other", "2026-06-01T10:00:01Z"),  # 9 min 59 s: not yet
        ("r2", "free", "2026-06-01T09:00:00Z"),  # no bound: never
        ("r3", "feed", "not a time"),  # no evidence
    ]
    found = slow_steps(running, {"feed": 600.0, "other": 600.0}, NOW)
    assert found == [Slow("r1", "feed", "2026-06-01T10:00:00Z", 600.0, 600.0)]
    assert found[0].key == "r1 feed"


def test_the_notice_names_every_slow_asset_of_the_run_and_says_it_goes_on():
    title, body = slow_message("shop", "r1", [("feed", 750.0, 600.0), ("orders", 610.0, 600.0)])
    assert title == "croft: shop"
    assert body.startswith(
        "feed and orders are slow in scheduled run r1: feed has run 12 min (slow after 10 min)."
    )
    assert "It keeps running; max_runtime still ends it." in body and body.endswith("croft logs r1")
