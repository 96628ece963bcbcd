"""DST: golden days per zone, a minute-by-minute reference, and cronsim as a second oracle.

2026 transitions (UTC instant -> local wall after it):
  America/Los_Angeles  2026-03-08T10:00Z -> 03:00 PDT      2026-11-01T09:00Z -> 01:00 PST
  America/New_York     2026-03-08T07:00Z -> 03:00 EDT      2026-11-01T06:00Z -> 01:00 EST
  Europe/London        2026-03-29T01:00Z -> 02:00 BST      2026-10-25T01:00Z -> 01:00 GMT
  Australia/Sydney     2026-04-04T16:00Z -> 02:00 AEST     2026-10-03T16:00Z -> 03:00 AEDT
  Australia/Lord_Howe  2026-04-04T15:00Z -> 01:30 (+10:30) 2026-10-03T15:30Z -> 02:30 (+11:00)
  Asia/Kolkata         none (+05:30 all year)
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from croft.schedule.cron import CronSpec, fires_with_notes, latest_fire_at_or_before, next_fires, parse_cron

MINUTE = timedelta(minutes=1)

TRANSITIONS = [
    ("America/Los_Angeles", "2026-03-08T10:00:00Z"),
    ("America/Los_Angeles", "2026-11-01T09:00:00Z"),
    ("America/New_York", "2026-03-08T07:00:00Z"),
    ("America/New_York", "2026-11-01T06:00:00Z"),
    ("Europe/London", "2026-03-29T01:00:00Z"),
    ("Europe/London", "2026-10-25T01:00:00Z"),
    ("Australia/Sydney", "2026-04-04T16:00:00Z"),
    ("Australia/Sydney", "2026-10-03T16:00:00Z"),
    ("Australia/Lord_Howe", "2026-04-04T15:00:00Z"),
    ("Australia/Lord_Howe", "2026-10-03T15:30:00Z"),
    ("Asia/Kolkata", "2026-06-15T00:00:00Z"),
]

CRONS = [
    "*/15 * * * *",
    "0 * * * *",
    "30 1 * * *",
    "30 2 * * *",
    "0 1-3 * * *",
    "*/20 1-2 * * *",
    "45 1 * * *",
    "15 2 * * *",
    "* 2 * * *",
    "0,30 1,2 * * *",
    "0 */2 * * *",
    "10 0 * * *",
    "0 9 * * 1-5",
]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def local_iso(moments: list[datetime], zone: str) -> list[str]:
    return [m.astimezone(ZoneInfo(zone)).isoformat(timespec="minutes") for m in moments]


# ----------------------------------------------------------------------------------------------------------
# The reference: walk real time one minute at a time and ask, at each minute, whether cron fires.


def _wall_matches(spec: CronSpec, wall: datetime) -> bool:
    dom = wall.day in spec.doms
    dow = (wall.weekday() + 1) % 7 in spec.dows
    day = (dom and dow) if (spec.dom_star or spec.dow_star) else (dom or dow)
    return wall.minute in spec.minutes and wall.hour in spec.hours and wall.month in spec.months and day


def reference_fires(cron: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    """Fires in (start, end]: gap minutes fire at the landing minute; a fixed-time cron does not fire a wall
    minute it has already seen; an interval does. Walks from a day before `start` to know what was seen."""
    spec, tz = parse_cron(cron), ZoneInfo(zone)
    moment = start.replace(second=0, microsecond=0) - timedelta(hours=26)
    previous = moment.astimezone(tz).replace(tzinfo=None, fold=0)
    seen: set[datetime] = {previous}
    fires = []
    while moment < end:
        moment += MINUTE
        wall = moment.astimezone(tz).replace(tzinfo=None, fold=0)
        fire = False
        skipped = previous + MINUTE
        while skipped < wall:  # the clock jumped: these walls did not exist today
            fire = fire or _wall_matches(spec, skipped)
            skipped += MINUTE
        if _wall_matches(spec, wall) and (spec.is_interval or wall not in seen):
            fire = True
        seen.add(wall)
        previous = wall
        if fire and moment > start:
            fires.append(moment)
    return fires


@pytest.fixture(scope="module")
def references() -> dict[tuple[str, str, str], tuple[datetime, datetime, list[datetime]]]:
    out = {}
    for zone, instant in TRANSITIONS:
        start, end = utc(instant) - timedelta(hours=20), utc(instant) + timedelta(hours=20)
        for cron in CRONS:
            out[(zone, instant, cron)] = (
                start,
                end,
                reference_fires(cron, zone, start - timedelta(hours=26), end),
            )
    return out


@pytest.mark.parametrize(("zone", "instant"), TRANSITIONS, ids=[f"{z}-{i[:10]}" for z, i in TRANSITIONS])
def test_next_fires_agree_with_the_minute_by_minute_reference(zone, instant, references):
    for cron in CRONS:
        start, end, expected_all = references[(zone, instant, cron)]
        expected = [f for f in expected_all if start < f <= end]
        got = next_fires(cron, zone, start, len(expected) + 1)
        assert got[: len(expected)] == expected, cron
        assert got[-1] > end, cron


@pytest.mark.parametrize(("zone", "instant"), TRANSITIONS, ids=[f"{z}-{i[:10]}" for z, i in TRANSITIONS])
def test_next_and_latest_agree_with_the_reference_from_every_seventh_minute(zone, instant, references):
    for cron in CRONS:
        start, end, expected = references[(zone, instant, cron)]
        moment = start
        while moment < end:
            cut = bisect_right(expected, moment)
            later, earlier = expected[cut:], expected[:cut]
            got = next_fires(cron, zone, moment, 1)
            if later:
                assert got == later[:1], (cron, moment)
            else:
                assert got[0] > end, (cron, moment)
            if earlier:
                assert latest_fire_at_or_before(cron, zone, moment) == earlier[-1], (cron, moment)
            moment += 7 * MINUTE


# ----------------------------------------------------------------------------------------------------------
# cronsim as a second oracle


def cronsim_fires(cron: str, zone: str, after: datetime, upto: datetime) -> list[datetime]:
    """cronsim's fires in (after, upto], seeded 3 h early so a start inside a repeated hour is safe."""
    seed = (after - timedelta(hours=3)).astimezone(ZoneInfo(zone))
    out = []
    for fire in CronSim(cron, seed):
        moment = fire.astimezone(UTC)
        if moment <= after:
            continue
        if moment > upto:
            break
        out.append(moment)
    return out


def cronsim_lord_howe_quirk(zone: str, moment: datetime) -> bool:
    """On Lord Howe's half-hour fall-back (2026-04-05, 02:00 +11 -> 01:30 +10:30) cronsim's interval walk
    steps from the repeated half hour straight to 02:30, so it never fires 02:00-02:29 (+10:30), wall
    times that happen once. croft fires them, and the minute-by-minute reference agrees with croft."""
    local = moment.astimezone(ZoneInfo(zone))
    return (
        zone == "Australia/Lord_Howe"
        and local.date() == date(2026, 4, 5)
        and local.hour == 2
        and local.minute < 30
    )


@pytest.mark.parametrize(("zone", "instant"), TRANSITIONS, ids=[f"{z}-{i[:10]}" for z, i in TRANSITIONS])
def test_cronsim_agrees_except_where_an_interval_lists_a_time_inside_the_gap(zone, instant):
    # Both fire a fixed time (no * at the start of minute or hour) once: in the first pass of a repeated
    # hour, and at the first minute after a gap. Both fire intervals in both passes of a repeated hour.
    # They differ on one rule: cronsim walks intervals in real time, so an interval's wall times inside a
    # spring-forward gap never fire; croft fires them once at the end of the gap ("*/20 2 * * *" on a
    # spring-forward day fires at 03:00), so a schedule never silently skips a day. And cronsim has one
    # quirk on Lord Howe (see cronsim_lord_howe_quirk).
    start, end = utc(instant) - timedelta(hours=20), utc(instant) + timedelta(hours=20)
    for cron in CRONS:
        ours = [f for f in fires_with_notes(cron, zone, start, 200) if f.at <= end]
        theirs = set(cronsim_fires(cron, zone, start, end))
        assert theirs <= {f.at for f in ours}, cron
        extra = [f for f in ours if f.at not in theirs and not cronsim_lord_howe_quirk(zone, f.at)]
        assert all(f.note is not None and f.note.kind == "gap" for f in extra), cron
        if not parse_cron(cron).is_interval:
            assert not extra, cron


def test_cronsim_quirk_on_lord_howe_is_real_and_croft_matches_the_reference():
    start, end = utc("2026-04-04T14:00:00Z"), utc("2026-04-04T17:00:00Z")
    theirs = cronsim_fires("0 */2 * * *", "Australia/Lord_Howe", start, end)
    ours = next_fires("0 */2 * * *", "Australia/Lord_Howe", start, 2)
    assert local_iso(theirs, "Australia/Lord_Howe") == []
    assert local_iso(ours, "Australia/Lord_Howe") == ["2026-04-05T02:00+10:30", "2026-04-05T04:00+10:30"]
    assert ours[:1] == reference_fires("0 */2 * * *", "Australia/Lord_Howe", start, end)


def test_cronsim_skips_an_interval_inside_the_gap_where_croft_fires_after_it():
    start, end = utc("2026-03-08T05:00:00Z"), utc("2026-03-08T12:00:00Z")
    assert cronsim_fires("*/20 2 * * *", "America/New_York", start, end) == []
    assert local_iso(next_fires("*/20 2 * * *", "America/New_York", start, 1), "America/New_York") == [
        "2026-03-08T03:00-04:00"
    ]


# ----------------------------------------------------------------------------------------------------------
# Golden days, in spring/fall pairs per zone


@pytest.mark.parametrize(
    ("zone", "cron", "after", "expected"),
    [
        pytest.param(
            "America/Los_Angeles", "30 2 * * *", "2026-03-07T00:00:00-08:00",
            ["2026-03-07T02:30-08:00", "2026-03-08T03:00-07:00", "2026-03-09T02:30-07:00"],
            id="la-spring-gap-time-fires-at-03:00",
        ),
        pytest.param(
            "America/Los_Angeles", "30 1 * * *", "2026-10-31T00:00:00-07:00",
            ["2026-10-31T01:30-07:00", "2026-11-01T01:30-07:00", "2026-11-02T01:30-08:00"],
            id="la-fall-repeated-time-fires-once",
        ),
        pytest.param(
            "America/New_York", "30 2 * * *", "2026-03-07T12:00:00-05:00",
            ["2026-03-08T03:00-04:00", "2026-03-09T02:30-04:00"],
            id="new-york-spring",
        ),
        pytest.param(
            "America/New_York", "30 1 * * *", "2026-10-31T12:00:00-04:00",
            ["2026-11-01T01:30-04:00", "2026-11-02T01:30-05:00"],
            id="new-york-fall",
        ),
        pytest.param(
            "Europe/London", "30 1 * * *", "2026-03-28T12:00:00+00:00",
            ["2026-03-29T02:00+01:00", "2026-03-30T01:30+01:00"],
            id="london-spring-01:00-to-02:00",
        ),
        pytest.param(
            "Europe/London", "30 1 * * *", "2026-10-24T12:00:00+01:00",
            ["2026-10-25T01:30+01:00", "2026-10-26T01:30+00:00"],
            id="london-fall-02:00-to-01:00",
        ),
        pytest.param(
            "Australia/Sydney", "30 2 * * *", "2026-04-04T12:00:00+11:00",
            ["2026-04-05T02:30+11:00", "2026-04-06T02:30+10:00"],
            id="sydney-fall-03:00-to-02:00",
        ),
        pytest.param(
            "Australia/Sydney", "30 2 * * *", "2026-10-03T12:00:00+10:00",
            ["2026-10-04T03:00+11:00", "2026-10-05T02:30+11:00"],
            id="sydney-spring-02:00-to-03:00",
        ),
        pytest.param(
            "Australia/Lord_Howe", "45 1 * * *", "2026-04-04T12:00:00+11:00",
            ["2026-04-05T01:45+11:00", "2026-04-06T01:45+10:30"],
            id="lord-howe-fall-half-hour-repeat",
        ),
        pytest.param(
            "Australia/Lord_Howe", "15 2 * * *", "2026-10-03T12:00:00+10:30",
            ["2026-10-04T02:30+11:00", "2026-10-05T02:15+11:00"],
            id="lord-howe-spring-half-hour-gap",
        ),
    ],
)  # fmt: skip
def test_golden_dst_days(zone, cron, after, expected):
    assert local_iso(next_fires(cron, zone, datetime.fromisoformat(after), len(expected)), zone) == expected


def test_asked_during_the_repeat_a_fixed_time_next_fires_tomorrow():
    # 09:10Z is 01:10 PST, the second pass; 01:30 already fired at its first pass (08:30Z).
    fires = next_fires("30 1 * * *", "America/Los_Angeles", utc("2026-11-01T09:10:00Z"), 1)
    assert local_iso(fires, "America/Los_Angeles") == ["2026-11-02T01:30-08:00"]


def test_several_gap_times_fold_into_the_one_fire_after_the_gap():
    fires = fires_with_notes("0,20,40 2 * * *", "America/Los_Angeles", utc("2026-03-08T08:00:00Z"), 2)
    assert local_iso([f.at for f in fires], "America/Los_Angeles") == [
        "2026-03-08T03:00-07:00",
        "2026-03-09T02:00-07:00",
    ]
    assert fires[0].note is not None
    assert fires[0].note.kind == "gap"
    assert fires[0].note.walls == ("02:00", "02:20", "02:40")


def test_fall_back_fires_once_at_first_pass():
    fires = fires_with_notes("0,30 1 * * *", "America/New_York", utc("2026-11-01T04:00:00Z"), 2)
    assert local_iso([f.at for f in fires], "America/New_York") == [
        "2026-11-01T01:00-04:00",
        "2026-11-01T01:30-04:00",
    ]
    assert {f.note.kind for f in fires if f.note} == {"repeat_first"}


def test_every_hour_keeps_firing_hourly_in_real_time_through_the_repeated_hour():
    fires = next_fires("0 * * * *", "America/Los_Angeles", utc("2026-11-01T06:30:00Z"), 5)
    assert [f.isoformat() for f in fires] == [f"2026-11-01T{h:02d}:00:00+00:00" for h in (7, 8, 9, 10, 11)]


@pytest.mark.parametrize(("zone", "instant"), TRANSITIONS, ids=[f"{z}-{i[:10]}" for z, i in TRANSITIONS])
def test_every_15_minutes_has_no_duplicate_and_no_missing_instant(zone, instant):
    start = utc(instant) - timedelta(hours=20)
    fires = next_fires("*/15 * * * *", zone, start, 300)
    gaps = {b - a for a, b in pairwise(fires)}
    # Lord Howe's half-hour changes keep quarter hours on the quarter, so spacing never changes either.
    assert gaps == {timedelta(minutes=15)}
    assert len(set(fires)) == 300


def test_whole_local_hours_are_half_hours_in_utc_in_kolkata():
    fires = next_fires("0 9 * * *", "Asia/Kolkata", utc("2026-06-15T00:00:00Z"), 2)
    assert [f.isoformat() for f in fires] == ["2026-06-15T03:30:00+00:00", "2026-06-16T03:30:00+00:00"]


def test_latest_fire_on_spring_forward_day_is_the_instant_after_the_gap():
    latest = latest_fire_at_or_before("30 2 * * *", "America/Los_Angeles", utc("2026-03-08T12:00:00Z"))
    assert local_iso([latest], "America/Los_Angeles") == ["2026-03-08T03:00-07:00"]


def test_latest_fire_during_the_repeated_hour_is_the_first_occurrence():
    latest = latest_fire_at_or_before("30 1 * * *", "America/Los_Angeles", utc("2026-11-01T09:45:00Z"))
    assert local_iso([latest], "America/Los_Angeles") == ["2026-11-01T01:30-07:00"]


def test_a_dst_note_names_the_day_of_the_change():
    fire = fires_with_notes("30 1 * * *", "Europe/London", utc("2026-03-27T12:00:00Z"), 2)
    assert fire[0].note is None
    assert fire[1].note is not None
    assert fire[1].note.day == date(2026, 3, 29)
