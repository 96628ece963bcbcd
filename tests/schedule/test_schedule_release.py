"""When a fire is let go: jitter (a hash, the same everywhere, short of the next fire) and quiet hours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from croft.core.clock import parse_instant
from croft.schedule import cron
from croft.schedule.jitter import jitter_delay
from croft.schedule.quiet import parse_windows, quiet_end, quiet_start, window_problem
from croft.schedule.release import Policy, due_fire, next_release, release_at, released_fires

LONDON = "Europe/London"


def t(text: str) -> datetime:
    return parse_instant(text)


def test_the_delay_is_a_hash_of_asset_and_fire_the_same_on_every_call_and_inside_its_bounds():
    fire = t("2026-06-01T10:00:00Z")
    delays = {jitter_delay("orders", fire, 300, fire + timedelta(hours=1)) for _ in range(3)}
    assert len(delays) == 1 and timedelta(0) <= delays.pop() < timedelta(minutes=5)
    spread = {jitter_delay(f"asset{i}", fire, 300, None) for i in range(50)}
    assert len(spread) > 20  # fifty assets firing together are spread, not stacked on one second
    assert jitter_delay("orders", fire, None, None) == timedelta(0)


def test_the_delay_never_reaches_the_next_fire():
    fire = t("2026-06-01T10:00:00Z")
    nxt = fire + timedelta(minutes=2)
    assert all(jitter_delay(f"a{i}", fire, 3600, nxt) < timedelta(minutes=2) for i in range(200))


def test_across_a_dst_change_each_fire_of_the_repeated_hour_has_its_own_delay_within_bounds():
    spec = cron.parse_cron("*/30 * * * *")
    policy = Policy(jitter_s=20 * 60)
    # London leaves summer time at 02:00 BST on 2026-10-25: 01:00-01:59 happens twice
    pairs = released_fires(
        "orders", spec, LONDON, t("2026-10-24T23:00:00Z"), t("2026-10-25T03:00:00Z"), policy
    )
    fires = [f for f, _ in pairs]
    assert len(fires) == len(set(fires)) == 8  # four hours of half-hours, the repeated hour kept twice
    for (fire, run), nxt in zip(pairs, [*fires[1:], None], strict=True):
        assert fire <= run < fire + timedelta(minutes=20)
        assert nxt is None or run < nxt
    again = released_fires(
        "orders", spec, LONDON, t("2026-10-24T23:00:00Z"), t("2026-10-25T03:00:00Z"), policy
    )
    assert again == pairs


def test_a_window_across_midnight_ends_at_its_wall_time_even_over_a_dst_change():
    windows = parse_windows(["22:00-06:00"])
    # 23:30 BST on Saturday 24 Oct; the clocks go back that night, so 06:00 GMT is 06:00Z
    assert quiet_end(t("2026-10-24T22:30:00Z"), windows, LONDON) == t("2026-10-25T06:00:00Z")
    assert quiet_start(t("2026-10-25T03:00:00Z"), windows, LONDON) == t("2026-10-24T21:00:00Z")
    assert quiet_end(t("2026-06-01T12:00:00Z"), windows, LONDON) == t("2026-06-01T12:00:00Z")
    assert quiet_start(t("2026-06-01T12:00:00Z"), windows, LONDON) is None


def test_fires_in_quiet_hours_are_let_go_once_at_the_window_end():
    spec = cron.parse_cron("0 * * * *")
    policy = Policy(quiet=parse_windows(["22:00-06:00"]))
    # 23:00 to 05:00 London (22:00Z to 04:00Z) fire inside the window; nothing is due until it ends
    fire, pending = due_fire("a", spec, LONDON, t("2026-06-02T04:59:00Z"), policy)
    assert fire == t("2026-06-01T20:00:00Z") and pending == t("2026-06-01T21:00:00Z")
    assert next_release("a", spec, LONDON, t("2026-06-02T04:59:00Z"), policy, pending) == t(
        "2026-06-02T05:00:00Z"
    )
    fire, pending = due_fire("a", spec, LONDON, t("2026-06-02T05:00:00Z"), policy)
    assert fire == t("2026-06-02T05:00:00Z") and pending is None
    assert release_at("a", spec, LONDON, t("2026-06-01T23:00:00Z"), policy) == t("2026-06-02T05:00:00Z")


def test_the_window_rule_refuses_what_it_cannot_read():
    assert window_problem(["22:00-06:00", "12:00-13:30"]) is None
    assert "HH:MM-HH:MM" in (window_problem(["10pm-6am"]) or "")
    assert "starts where it ends" in (window_problem(["06:00-06:00"]) or "")
    assert window_problem([]) is None  # none: how an ingest opts out of the project's quiet hours
    assert window_problem(7) is not None and window_problem({"a": 1}) is not None


def test_plain_policy_is_the_cron_itself():
    spec = cron.parse_cron("0 * * * *")
    now = datetime(2026, 6, 1, 10, 30, tzinfo=UTC)
    assert due_fire("a", spec, LONDON, now, Policy()) == (t("2026-06-01T10:00:00Z"), None)
    assert next_release("a", spec, LONDON, now, Policy()) == t("2026-06-01T11:00:00Z")
