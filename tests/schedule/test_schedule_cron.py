"""Cron parsing (Vixie semantics, refusals with suggestions) and fire times outside DST changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from croft.core.problems import CroftError, Problem
from croft.schedule.cron import (
    CRON_FIELDS_HINT,
    CronSpec,
    check_cron,
    closest,
    latest_fire_at_or_before,
    next_fire,
    next_fires,
    parse_cron,
    zone,
)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def local_iso(moments: list[datetime], tz: str) -> list[str]:
    return [m.astimezone(ZoneInfo(tz)).isoformat(timespec="minutes") for m in moments]


def refusal(text: str) -> Problem:
    found = check_cron(text)
    assert isinstance(found, Problem), text
    return found


# ----------------------------------------------------------------------------------------------------------
# Parsing


def test_it_parses_numbers_stars_ranges_steps_and_lists():
    spec = parse_cron("*/15 9-17 1,15 * 1-5")
    assert spec.minutes == {0, 15, 30, 45}
    assert spec.hours == set(range(9, 18))
    assert spec.doms == {1, 15}
    assert spec.months == set(range(1, 13))
    assert spec.dows == {1, 2, 3, 4, 5}
    assert (spec.dom_star, spec.dow_star, spec.is_interval) == (False, False, True)


def test_it_parses_a_range_with_a_step_and_a_start_with_a_step():
    assert parse_cron("10-40/10 * * * *").minutes == {10, 20, 30, 40}
    assert parse_cron("50/5 * * * *").minutes == {50, 55}  # a/n runs to the end of the field
    assert parse_cron("1,3-5,20-23/2 * * * *").minutes == {1, 3, 4, 5, 20, 22}
    assert parse_cron("0 0 */10 * *").doms == {1, 11, 21, 31}


def test_it_reads_month_and_weekday_names_in_any_case_and_7_is_sunday():
    spec = parse_cron("0 0 * JAN,jul-Sep mon-FRI")
    assert spec.months == {1, 7, 8, 9}
    assert spec.dows == {1, 2, 3, 4, 5}
    assert parse_cron("0 0 * * 7").dows == {0}
    assert parse_cron("0 0 * * 5-7").dows == {0, 5, 6}
    assert parse_cron("0 0 * * fri-sun").dows == {0, 5, 6}


def test_the_text_is_the_five_fields_one_space_apart_and_a_question_mark_is_a_star():
    assert parse_cron("  0   6 ?  *\t1-5 ").text == "0 6 * * 1-5"
    spec = parse_cron("0 0 ? * ?")
    assert spec.dom_star and spec.dow_star


@pytest.mark.parametrize(
    ("cron", "interval"),
    [("*/15 * * * *", True), ("0 * * * *", True), ("* 2 * * *", True), ("*/20 1-3 * * *", True),
     ("30 1 * * *", False), ("0 1-3 * * *", False), ("0,30 9 * * *", False)],
)  # fmt: skip
def test_an_interval_is_a_cron_whose_minute_or_hour_field_starts_with_a_star(cron, interval):
    assert parse_cron(cron).is_interval is interval


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("0 0 * *",
         'schedule "0 0 * *" has 4 fields; a cron has 5: minute hour day-of-month month day-of-week'),
        ("0", 'schedule "0" has 1 field; a cron has 5: minute hour day-of-month month day-of-week'),
        ("60 * * * *", 'schedule "60 * * * *": minute 60 is out of range (0-59)'),
        ("0 24 * * *", 'schedule "0 24 * * *": hour 24 is out of range (0-23)'),
        ("0 0 0 * *", 'schedule "0 0 0 * *": day of month 0 is out of range (1-31)'),
        ("0 0 32 * *", 'schedule "0 0 32 * *": day of month 32 is out of range (1-31)'),
        ("0 0 * 13 *", 'schedule "0 0 * 13 *": month 13 is out of range (1-12)'),
        ("0 0 * * 8", 'schedule "0 0 * * 8": day of week 8 is out of range (0-7)'),
        ("*/0 * * * *",
         'schedule "*/0 * * * *": the step in the minute field must be a whole number of 1 or more, got "0"'),
        ("0 0 * * mon-",
         'schedule "0 0 * * mon-": "mon-" in the day of week field is not a number, a name, * or a range'),
        ("0 0 L * *", 'schedule "0 0 L * *": "L" (last day) in the day of month field is not standard cron'),
        ("0 0 * * 5#3",
         'schedule "0 0 * * 5#3": "#" (nth weekday) in the day of week field is not standard cron'),
        ("0 0 15W * *",
         'schedule "0 0 15W * *": "W" (nearest weekday) in the day of month field is not standard cron'),
        ("0 0,,1 * * *", 'schedule "0 0,,1 * * *": the hour field has an empty list item'),
        ("0 0 30 2 *", 'schedule "0 0 30 2 *" never fires: February has no day 30'),
        ("0 0 31 4,6 *", 'schedule "0 0 31 4,6 *" never fires: April and June have no day 31'),
        ("0 0 31 apr,jun,sep,nov *",
         'schedule "0 0 31 apr,jun,sep,nov *" never fires: '
         "April, June, September and November have no day 31"),
        ("0 0 30,31 2 *", 'schedule "0 0 30,31 2 *" never fires: February has no day 30 or 31'),
        ("x 0 * * *", 'schedule "x 0 * * *": "x" is not a minute (0-59)'),
        ("0 0 * * 1/x",
         'schedule "0 0 * * 1/x": the step in the day of week field must be a whole number of 1 or more, '
         'got "x"'),
    ],
)  # fmt: skip
def test_it_refuses_with_a_message_naming_the_field(cron, message):
    found = refusal(cron)
    assert found.code == "SCHEDULE_INVALID"
    assert found.message == message
    assert found.hint


def test_parse_cron_raises_schedule_invalid_and_check_cron_returns_the_problem():
    with pytest.raises(CroftError) as caught:
        parse_cron("61 * * * *")
    assert caught.value.code == "SCHEDULE_INVALID"
    assert caught.value.problem == check_cron("61 * * * *")


def test_february_29_is_valid_and_a_day_in_any_listed_month_is_enough():
    assert isinstance(check_cron("0 0 29 2 *"), CronSpec)
    assert isinstance(check_cron("0 0 31 1,2 *"), CronSpec)
    assert isinstance(check_cron("0 0 30 2 mon"), CronSpec)  # the weekday alternative fires


@pytest.mark.parametrize(
    ("cron", "suggestion"),
    [
        ("0 0 * * fir", "0 0 * * fri"),
        ("0 0 * jnu *", "0 0 * jun *"),
        ("0 9 * * monday", "0 9 * * mon"),
        ("0 9 * * mno-fri", "0 9 * * mon-fri"),
        ("0 9 * * fri-mon", "0 9 * * 5-6,0-1"),
        ("0 22-2 * * *", "0 22-23,0-2 * * *"),
        ("0 22-4/2 * * *", "0 22-23/2,0-4/2 * * *"),
        ("0 23-1 * * *", "0 23,0-1 * * *"),
        ("0 9 * * 7-3", "0 9 * * 0-3"),
        ("0 0,,12 * * *", "0 0,12 * * *"),
        ("0 9 * * fir-mno", "0 9 * * 5-6,0-1"),
        ("0 0 9 * * *", "0 9 * * *"),
        ("0 30 9 * * mon-fri", "30 9 * * mon-fri"),
        ("0 9 * * * 2026", "0 9 * * *"),
        ("0 0 12 ? * MON-FRI 2026", "0 12 * * MON-FRI"),
        ("0 0 9 * * fir", "0 9 * * fri"),
    ],
)
def test_a_fixable_cron_suggests_a_cron_that_parses(cron, suggestion):
    found = refusal(cron)
    assert found.suggestion == suggestion
    assert isinstance(check_cron(suggestion), CronSpec)


def test_six_fields_say_croft_schedules_to_the_minute():
    found = refusal("0 0 9 * * *")
    assert (
        found.message
        == 'schedule "0 0 9 * * *" has 6 fields; croft schedules to the minute, so there is no seconds field'
    )
    assert found.hint == "drop the first (seconds) field: 0 9 * * *"
    assert refusal("0 0 9 * * fir").hint == "drop the first (seconds) field: 0 9 * * fri, and fix the rest"


def test_a_misspelled_name_hint_says_did_you_mean():
    assert refusal("0 0 * * fir").hint == f'did you mean "0 0 * * fri"? ({CRON_FIELDS_HINT})'


def test_an_impossible_cron_has_no_suggestion():
    for cron in ("0 0 30 2 *", "60 * * * *", "0 0 * * 5#3", "0 0 * * * * * *"):
        assert refusal(cron).suggestion is None


def test_closest_finds_typos_and_swaps_but_not_strangers():
    assert closest("fir", ("sun", "mon", "fri")) == "fri"
    assert closest("thrusday", ("thursday", "tuesday")) == "thursday"
    assert closest("banana", ("sun", "mon", "fri")) is None


# ----------------------------------------------------------------------------------------------------------
# Fires (no DST change involved)


def test_next_fires_are_strictly_after_in_order_and_distinct():
    fires = next_fires("0 * * * *", "UTC", utc("2026-05-01T10:00:00Z"), 3)
    assert [f.isoformat() for f in fires] == [
        "2026-05-01T11:00:00+00:00",
        "2026-05-01T12:00:00+00:00",
        "2026-05-01T13:00:00+00:00",
    ]
    assert all(f.tzinfo is UTC for f in fires)
    assert next_fires("0 * * * *", "UTC", utc("2026-05-01T10:00:00Z"), 0) == []


def test_hours_weekdays_and_the_month_boundary_are_in_the_project_zone():
    fires = next_fires("0 9 * * 1-5", "Europe/London", utc("2026-07-30T12:00:00Z"), 3)
    assert local_iso(fires, "Europe/London") == [
        "2026-07-31T09:00+01:00",  # Friday
        "2026-08-03T09:00+01:00",  # Monday, in the next month
        "2026-08-04T09:00+01:00",
    ]


def test_the_local_day_not_the_utc_day_decides_the_weekday():
    # 2026-05-04 is a Monday; 23:30 Sunday in New York is already Monday in UTC.
    fires = next_fires("30 23 * * 0", "America/New_York", utc("2026-05-03T12:00:00Z"), 1)
    assert local_iso(fires, "America/New_York") == ["2026-05-03T23:30-04:00"]
    assert fires[0].isoformat() == "2026-05-04T03:30:00+00:00"


def test_both_day_fields_restricted_fire_when_either_matches():
    fires = next_fires("0 0 13 * 5", "UTC", utc("2026-02-01T00:00:00Z"), 4)
    # Fridays 6, 13 (also the 13th), 20, 27 of February 2026.
    assert [f.day for f in fires] == [6, 13, 20, 27]


def test_a_day_field_starting_with_a_star_makes_both_fields_count():
    fires = next_fires("0 0 */2 * 1", "UTC", utc("2026-06-01T00:00:00Z"), 3)
    assert all(f.weekday() == 0 and f.day % 2 == 1 for f in fires)  # odd days that are Mondays


def test_february_29_fires_in_leap_years_only_across_2100():
    fires = next_fires("0 0 29 2 *", "UTC", utc("2095-01-01T00:00:00Z"), 3)
    assert [f.year for f in fires] == [2096, 2104, 2108]


def test_a_yearly_cron_fires_each_new_year():
    fires = next_fires("0 0 1 1 *", "Asia/Tokyo", utc("2026-05-01T00:00:00Z"), 2)
    assert local_iso(fires, "Asia/Tokyo") == ["2027-01-01T00:00+09:00", "2028-01-01T00:00+09:00"]


def test_next_fire_is_the_first_and_an_after_with_seconds_is_handled():
    assert next_fire("*/5 * * * *", "UTC", utc("2026-05-01T10:04:59.900Z")) == utc("2026-05-01T10:05:00Z")
    assert next_fire("*/5 * * * *", "UTC", utc("2026-05-01T10:05:00Z")) == utc("2026-05-01T10:10:00Z")


def test_a_naive_after_is_taken_as_utc():
    assert next_fire("0 * * * *", "UTC", datetime(2026, 5, 1, 10, 30)) == utc("2026-05-01T11:00:00Z")


def test_a_cron_with_no_fire_left_before_year_9999_gives_no_fires():
    assert next_fires("0 0 29 2 *", "UTC", utc("9999-03-01T00:00:00Z"), 3) == []


def test_an_invalid_cron_is_schedule_invalid_when_asking_for_fires():
    with pytest.raises(CroftError) as caught:
        next_fires("0 0 30 2 *", "UTC", utc("2026-01-01T00:00:00Z"), 1)
    assert caught.value.code == "SCHEDULE_INVALID"


def test_an_unknown_zone_is_config_invalid_with_did_you_mean():
    with pytest.raises(CroftError) as caught:
        zone("Europe/Londn")
    assert caught.value.code == "CONFIG_INVALID"
    assert caught.value.problem.suggestion == "Europe/London"
    assert zone("UTC") is zone("UTC")


# latest_fire_at_or_before


def test_latest_counts_a_fire_exactly_at_now():
    assert latest_fire_at_or_before("0 * * * *", "UTC", utc("2026-05-01T10:00:00Z")) == utc(
        "2026-05-01T10:00:00Z"
    )
    assert latest_fire_at_or_before("0 * * * *", "UTC", utc("2026-05-01T09:59:59Z")) == utc(
        "2026-05-01T09:00:00Z"
    )


def test_latest_monthly_in_the_project_zone():
    latest = latest_fire_at_or_before("0 6 1 * *", "America/Los_Angeles", utc("2026-05-01T12:00:00Z"))
    assert local_iso([latest], "America/Los_Angeles") == ["2026-04-01T06:00-07:00"]


def test_latest_looks_back_at_most_400_days():
    now = utc("2026-05-01T00:00:00Z")
    assert latest_fire_at_or_before("0 0 1 1 *", "UTC", now) == utc("2026-01-01T00:00:00Z")
    assert latest_fire_at_or_before("0 0 1 5 *", "UTC", now - timedelta(seconds=1)) == utc(
        "2025-05-01T00:00:00Z"
    )
    assert latest_fire_at_or_before("0 0 29 2 *", "UTC", now) is None  # 2024-02-29 is 792 days back


def test_forward_fires_walked_back_with_latest_give_the_same_fires():
    for cron in ("*/15 * * * *", "0 9 * * 1-5", "30 2 * * *", "0 0 1 */3 *"):
        fires = next_fires(cron, "America/New_York", utc("2026-02-25T00:00:00Z"), 5)
        for before, fire in pairwise(fires):
            assert latest_fire_at_or_before(cron, "America/New_York", fire - timedelta(seconds=1)) == before
