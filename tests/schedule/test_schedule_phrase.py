"""The schedule language: phrases, @macros and crons to cron text; refusals that say why and offer a fix."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from croft.core.problems import Problem
from croft.schedule.cron import next_fires
from croft.schedule.phrase import PHRASES_HINT, TIMES_HINT, Schedule, parse_schedule

ACCEPTED = [
    # every N minutes / hours
    ("every minute", "* * * * *"),
    ("every min", "* * * * *"),
    ("every 1 minute", "* * * * *"),
    ("every 2 minutes", "*/2 * * * *"),
    ("every 3 mins", "*/3 * * * *"),
    ("every 4 min", "*/4 * * * *"),
    ("every 5 minutes", "*/5 * * * *"),
    ("every 6 minutes", "*/6 * * * *"),
    ("every 10 minutes", "*/10 * * * *"),
    ("every 12 minutes", "*/12 * * * *"),
    ("every 15 minutes", "*/15 * * * *"),
    ("every 20 minutes", "*/20 * * * *"),
    ("every 30 minutes", "*/30 * * * *"),
    ("every 60 minutes", "0 * * * *"),
    ("Every 15 Minutes", "*/15 * * * *"),
    ("every   15    minutes", "*/15 * * * *"),
    ("every 05 minutes", "*/5 * * * *"),
    ("every hour", "0 * * * *"),
    ("hourly", "0 * * * *"),
    ("Hourly.", "0 * * * *"),
    ("hourly at :05", "5 * * * *"),
    ("every hour at :15", "15 * * * *"),
    ("hourly at :00", "0 * * * *"),
    ("hourly at :59", "59 * * * *"),
    ("every 1 hour", "0 * * * *"),
    ("every 2 hours", "0 */2 * * *"),
    ("every 3 hrs", "0 */3 * * *"),
    ("every 4 hr", "0 */4 * * *"),
    ("every 6 hours", "0 */6 * * *"),
    ("every 8 hours", "0 */8 * * *"),
    ("every 12 hours", "0 */12 * * *"),
    ("every 24 hours", "0 0 * * *"),
    # daily and times
    ("daily", "0 0 * * *"),
    ("every day", "0 0 * * *"),
    ("daily at 06:00", "0 6 * * *"),
    ("daily at 6:30", "30 6 * * *"),
    ("daily at 18:45", "45 18 * * *"),
    ("daily at 00:00", "0 0 * * *"),
    ("daily at 23:59", "59 23 * * *"),
    ("every day at 7am", "0 7 * * *"),
    ("daily at 9 am", "0 9 * * *"),
    ("daily at 6:30pm", "30 18 * * *"),
    ("daily at 6:30 PM", "30 18 * * *"),
    ("daily at 6:30 p.m.", "30 18 * * *"),
    ("daily at 7 a.m", "0 7 * * *"),
    ("daily at 12am", "0 0 * * *"),
    ("daily at 12pm", "0 12 * * *"),
    ("daily at 12:15am", "15 0 * * *"),
    ("daily at noon", "0 12 * * *"),
    ("daily at midnight", "0 0 * * *"),
    ("Daily At Noon.", "0 12 * * *"),
    # weekdays and weekends
    ("weekdays", "0 0 * * 1-5"),
    ("weekdays at 9am", "0 9 * * 1-5"),
    ("every weekday at 08:30", "30 8 * * 1-5"),
    ("every weekdays at 5pm", "0 17 * * 1-5"),
    ("on weekdays at 07:15", "15 7 * * 1-5"),
    ("weekends", "0 0 * * 0,6"),
    ("weekends at 10:00", "0 10 * * 0,6"),
    ("every weekend at noon", "0 12 * * 0,6"),
    ("on weekends at 9:30am", "30 9 * * 0,6"),
    # monthly
    ("monthly", "0 0 1 * *"),
    ("monthly at 06:00", "0 6 1 * *"),
    ("monthly at midnight", "0 0 1 * *"),
    # named days
    ("every monday", "0 0 * * 1"),
    ("every monday at 08:30", "30 8 * * 1"),
    ("monday at 9am", "0 9 * * 1"),
    ("on friday at 17:00", "0 17 * * 5"),
    ("every sunday at noon", "0 12 * * 0"),
    ("mondays at 9am", "0 9 * * 1"),
    ("every monday and thursday at 9am", "0 9 * * 1,4"),
    ("mon, wed and fri at 07:00", "0 7 * * 1,3,5"),
    ("monday, wednesday, and friday at 6pm", "0 18 * * 1,3,5"),
    ("mon-fri at 9am", "0 9 * * 1-5"),
    ("monday to friday at 8:00", "0 8 * * 1-5"),
    ("tuesday through thursday at 5pm", "0 17 * * 2-4"),
    ("tue thru thu at 10:00", "0 10 * * 2-4"),
    ("fri-mon at 7am", "0 7 * * 0,1,5,6"),
    ("sat and sun at 11am", "0 11 * * 0,6"),
    ("tues and thurs at 1pm", "0 13 * * 2,4"),
    ("every wed at 3:45pm", "45 15 * * 3"),
    ("saturdays", "0 0 * * 6"),
    ("sun-tue at 22:00", "0 22 * * 0-2"),
    ("mon-wed, fri at 06:00", "0 6 * * 1-3,5"),
    # macros
    ("@hourly", "0 * * * *"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@weekly", "0 0 * * 0"),
    ("@monthly", "0 0 1 * *"),
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@Daily", "0 0 * * *"),
    # crons
    ("0 6 * * 1-5", "0 6 * * 1-5"),
    ("*/15 * * * *", "*/15 * * * *"),
    ("0  6 *  * *", "0 6 * * *"),
    ("30 2 ? * MON-FRI", "30 2 * * MON-FRI"),
    ("0 0 1 jan *", "0 0 1 jan *"),
    ("0 9 * * 7", "0 9 * * 7"),
    ("0 0 29 2 *", "0 0 29 2 *"),
]


@pytest.mark.parametrize(("text", "cron"), ACCEPTED, ids=[t for t, _ in ACCEPTED])
def test_phrase_gives_cron(text, cron):
    found = parse_schedule(text)
    assert isinstance(found, Schedule), found
    assert found.cron == cron
    assert found.spec.text == cron


def test_the_table_has_at_least_80_pairs():
    assert len(ACCEPTED) >= 80


def test_the_text_is_kept_as_written_and_trimmed():
    found = parse_schedule("  Every Monday  at 08:30  ")
    assert isinstance(found, Schedule)
    assert found.text == "Every Monday  at 08:30"
    assert found.cron == "30 8 * * 1"


@pytest.mark.parametrize("cron", sorted({c for _, c in ACCEPTED}))
def test_every_cron_it_gives_parses_again_to_itself_and_fires(cron):
    again = parse_schedule(cron)
    assert isinstance(again, Schedule)
    assert again.cron == cron
    fires = next_fires(again.spec, "America/Los_Angeles", datetime(2026, 5, 1, tzinfo=UTC), 3)
    assert len(fires) == 3


def test_an_unknown_phrase_says_what_croft_reads():
    found = parse_schedule("whenever you like")
    assert isinstance(found, Problem)
    assert found.code == "SCHEDULE_INVALID"
    assert found.message == 'schedule "whenever you like" is not a phrase croft knows, nor a 5-field cron'
    assert found.hint == PHRASES_HINT
    assert found.suggestion is None


@pytest.mark.parametrize(("value", "message"), [("   ", "schedule is empty"), ("", "schedule is empty"),
                                                (None, "schedule must be a string, got null"),
                                                (15, "schedule must be a string, got int"),
                                                (["daily"], "schedule must be a string, got list")])  # fmt: skip
def test_empty_or_not_a_string_is_refused(value, message):
    found = parse_schedule(value)
    assert isinstance(found, Problem)
    assert found.message == message
    assert found.hint == PHRASES_HINT


DID_YOU_MEAN = [
    ("evry hour", "every hour"),
    ("every hor", "every hour"),
    ("hourley", "hourly"),
    ("dialy", "daily"),
    ("dayly at 6am", "daily at 6am"),
    ("daily at 6", "daily at 06:00"),
    ("daily at 18", "daily at 18:00"),
    ("daily at 24:00", "daily at 00:00"),
    ("daily at 13pm", "daily at 13:00"),
    ("wekdays at 9am", "weekdays at 9am"),
    ("weekdays 9am", "weekdays at 9am"),
    ("every mondy at 9am", "every monday at 9am"),
    ("every thrusday at 9", "every thursday at 09:00"),
    ("tuseday at 10:00", "tuesday at 10:00"),
    ("wendesday", "wednesday"),
    ("every 15 minuts", "every 15 minutes"),
    ("15 minutes", "every 15 minutes"),
    ("at 6am", "daily at 6am"),
    ("6:30pm", "daily at 6:30pm"),
    ("hourly at 5", "hourly at :05"),
    ("every 7 minutes", "every 6 minutes"),
    ("every 90 minutes", "every hour"),
    ("every 5 hours", "every 4 hours"),
    ("every 36 hours", "daily at 00:00"),
    ("every 30 seconds", "every minute"),
    ("every 2 days", "0 0 */2 * *"),
    ("every 3 months", "0 0 1 */3 *"),
    ("every week", "every monday at 00:00"),
    ("weekly", "every monday at 00:00"),
    ("nightly", "daily at 00:00"),
    ("twice a day", "0 0,12 * * *"),
    ("once a year", "0 0 1 1 *"),
    ("every other day", "0 0 */2 * *"),
    ("every hours", "every hour"),
    ("@hourley", "@hourly"),
    ("@dayly", "@daily"),
    ("0 9 * * mno", "0 9 * * mon"),
    ("0 9 * * fir-mon", "0 9 * * 5-6,0-1"),
    ("0 22-2 * * *", "0 22-23,0-2 * * *"),
    ("0 0 9 * * *", "0 9 * * *"),
    ("0 0 12 ? * MON-FRI 2026", "0 12 * * MON-FRI"),
]


@pytest.mark.parametrize(("text", "suggestion"), DID_YOU_MEAN, ids=[t for t, _ in DID_YOU_MEAN])
def test_a_misspelled_or_impossible_schedule_suggests_one_that_parses(text, suggestion):
    found = parse_schedule(text)
    assert isinstance(found, Problem)
    assert found.code == "SCHEDULE_INVALID"
    assert found.suggestion == suggestion
    assert isinstance(parse_schedule(suggestion), Schedule)
    if not text.startswith("0 0 9") and not text.endswith("2026"):  # field-count hints say "drop ..."
        assert found.hint.startswith(f'did you mean "{suggestion}"?')


def test_there_are_at_least_30_suggestion_cases():
    assert len(DID_YOU_MEAN) >= 30


@pytest.mark.parametrize(
    ("n", "suggestion"),
    [(7, "every 6 minutes"), (8, "every 6 minutes"), (9, "every 10 minutes"), (25, "every 20 minutes"),
     (45, "every 30 minutes"), (50, "every hour"), (90, "every hour"), (120, "every 2 hours"),
     (1440, "daily at 00:00"), (0, "every minute")],
)  # fmt: skip
def test_every_n_minutes_must_divide_60_and_the_nearest_that_does_is_suggested(n, suggestion):
    found = parse_schedule(f"every {n} minutes")
    assert isinstance(found, Problem)
    assert found.suggestion == suggestion
    if n:
        assert found.message == (
            f'schedule "every {n} minutes": {n} does not divide 60, so cron cannot fire every {n} minutes '
            "(its minutes restart at :00 each hour)"
        )


@pytest.mark.parametrize(
    ("n", "suggestion"),
    [(5, "every 4 hours"), (7, "every 6 hours"), (36, "daily at 00:00"), (0, "every hour")],
)
def test_every_n_hours_must_divide_24(n, suggestion):
    found = parse_schedule(f"every {n} hours")
    assert isinstance(found, Problem)
    assert found.suggestion == suggestion


@pytest.mark.parametrize(
    ("text", "message", "suggestion"),
    [
        ("daily at 6", "6 could be 06:00 or 18:00", "daily at 06:00"),
        ("daily at 18", "write the time with minutes: 18:00", "daily at 18:00"),
        ("daily at 24:00", "24:00 is not a time of day; days start at 00:00", "daily at 00:00"),
        ("daily at 13pm", "13pm mixes a 24-hour time with am/pm", "daily at 13:00"),
        ("daily at 9:75", "9:75 is not a time of day (00:00 to 23:59)", None),
        ("daily at 25:00", "25:00 is not a time of day (00:00 to 23:59)", None),
        ("daily at 9:75am", "9:75am is not a time of day", None),
        ("daily at 30pm", "30pm is not a time of day", None),
        ("daily at teatime", '"teatime" is not a time croft reads', None),
    ],
)
def test_times_a_bare_hour_is_ambiguous_24_00_is_00_00_and_am_pm_needs_a_12_hour_clock(
    text, message, suggestion
):
    found = parse_schedule(text)
    assert isinstance(found, Problem)
    assert found.message == f'schedule "{text}": {message}'
    assert found.suggestion == suggestion
    if suggestion is None:
        assert found.hint == TIMES_HINT


def test_a_minute_past_the_hour_must_be_under_60():
    found = parse_schedule("hourly at :75")
    assert isinstance(found, Problem)
    assert found.message == 'schedule "hourly at :75": :75 is not a minute of the hour (:00 to :59)'


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("every 30 seconds", "croft schedules to the minute, so every minute is the most often"),
        ("every 2 days", "cron cannot count days across months (they restart on the 1st)"),
        ("every 2 weeks", "cron cannot count weeks"),
        ("every 3 months", "cron counts months only when they divide the year (2, 3, 4 or 6)"),
        ("every 5 months", "cron counts months only when they divide the year (2, 3, 4 or 6)"),
        ("@reboot", "croft schedules times of day, not startup"),
    ],
)
def test_units_croft_cannot_schedule_say_why(text, why):
    found = parse_schedule(text)
    assert isinstance(found, Problem)
    assert found.message == f'schedule "{text}": {why}'


def test_every_2_days_explains_where_it_fires():
    found = parse_schedule("every 2 days")
    assert isinstance(found, Problem)
    assert found.hint == (
        'did you mean "0 0 */2 * *"? It fires on the 1st, 3rd, 5th, … of each month; or use daily'
    )


def test_cron_errors_come_from_the_cron_parser_suggestions_included():
    found = parse_schedule("0 0 * * fir")
    assert isinstance(found, Problem)
    assert found.message == 'schedule "0 0 * * fir": "fir" is not a day of week (sun-sat or 0-7)'
    assert found.suggestion == "0 0 * * fri"
    never = parse_schedule("0 0 30 2 *")
    assert isinstance(never, Problem)
    assert never.message == 'schedule "0 0 30 2 *" never fires: February has no day 30'


# ----------------------------------------------------------------------------------------------------------
# Properties


def _mutations(seed: int) -> list[str]:
    """Typos of accepted phrases: a letter dropped, doubled, swapped or replaced, or a word dropped."""
    chooser = random.Random(seed)
    out = []
    for text, _ in ACCEPTED:
        if len(text) < 4:
            continue
        i = chooser.randrange(1, len(text) - 1)
        out += [
            text[:i] + text[i + 1 :],
            text[:i] + text[i] + text[i:],
            text[: i - 1] + text[i] + text[i - 1] + text[i + 1 :],
            text[:i] + chooser.choice("abcdefghijklmnopqrstuvwxyz0123456789:*-") + text[i + 1 :],
            " ".join(text.split()[1:]),
        ]
    return out


def test_over_a_corpus_of_bad_schedules_every_suggestion_parses():
    offered = 0
    for text in _mutations(7):
        found = parse_schedule(text)
        if isinstance(found, Problem):
            assert found.details is None, text  # no internal error was swallowed
            if found.suggestion is not None:
                offered += 1
                assert isinstance(parse_schedule(found.suggestion), Schedule), (text, found.suggestion)
    assert offered > 100


SCHEDULE_ALPHABET = st.sampled_from(
    [*"0123456789*/,-?#@:. aemnLW", "every ", "minutes", " at ", "daily", "hour", "mon", "fri", "pm", "\x00"]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=40), st.lists(SCHEDULE_ALPHABET, max_size=14).map("".join)))
def test_parse_schedule_never_raises_and_every_suggestion_parses(text):
    found = parse_schedule(text)
    if isinstance(found, Problem):
        assert found.code == "SCHEDULE_INVALID"
        assert found.details is None, found.details
        if found.suggestion is not None:
            assert isinstance(parse_schedule(found.suggestion), Schedule)
    else:
        assert found.cron == found.spec.text


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.none(), st.integers(), st.floats(), st.binary(max_size=8), st.dictionaries(st.text(), st.text())
    )
)
def test_parse_schedule_never_raises_whatever_it_is_given(value):
    found = parse_schedule(value)
    assert isinstance(found, Problem)
    assert found.message.startswith("schedule must be a string, got ")


def test_huge_numbers_and_long_crons_are_refused_calmly():
    digits = "9" * 5000  # beyond Python's int-from-string limit
    for text in ("every 99999999999999999999999 minutes", "0 0 * * * * * *", digits, "* " * 3000,
                 f"every {digits} minutes", f"every {digits} hours", f"every {digits} days", f"{digits} * * * *",
                 f"0 0 1-{digits} * *"):  # fmt: skip
        found = parse_schedule(text)
        assert isinstance(found, Problem)
        assert found.details is None
    huge_step = parse_schedule(f"*/{digits} * * * *")  # a step past the field's end leaves its start
    assert isinstance(huge_step, Schedule)
    assert huge_step.spec.minutes == {0}


# ----------------------------------------------------------------------------------------------------------
# docs/scheduling.md is checked: every example in its tables means what the page says.


def _doc_tables() -> list[tuple[str, list[list[list[str]]]]]:
    """(header, rows) for each table in docs/scheduling.md; a cell is the list of its `code` spans."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "scheduling.md").read_text(encoding="utf-8")
    tables: list[tuple[str, list[list[list[str]]]]] = []
    header = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = line
            tables.append((header, []))
        elif not line.startswith("|---"):
            cells = line.strip("|").split(" | ")
            tables[-1][1].append([re.findall(r"`([^`]+)`", cell) for cell in cells])
    return tables


def test_every_accepted_form_in_the_scheduling_guide_gives_the_cron_it_shows():
    checked = 0
    for header, rows in _doc_tables():
        if not header.startswith("| write | cron"):
            continue
        for row in rows:
            for text in row[0]:
                if " N " in f" {text} ":
                    continue  # a pattern, not an example
                found = parse_schedule(text)
                assert isinstance(found, Schedule), text
                assert found.cron in row[1], text
                checked += 1
    assert checked > 30


def test_every_refusal_in_the_scheduling_guide_is_refused_with_the_suggestion_shown():
    checked = 0
    for header, rows in _doc_tables():
        if not header.startswith("| write |") or "suggests" not in header:
            continue
        for row in rows:
            for text in row[0]:
                found = parse_schedule(text)
                assert isinstance(found, Problem), text
                if row[-1] and not row[-1][0].startswith("every monday at 09"):
                    assert found.suggestion == row[-1][0], text
                checked += 1
    assert checked > 20


def test_every_cron_example_in_the_scheduling_guide_parses():
    crons = [
        row[0][0] for header, rows in _doc_tables() if header.startswith("| cron | fires") for row in rows
    ]
    assert crons
    assert all(isinstance(parse_schedule(c), Schedule) for c in crons)
