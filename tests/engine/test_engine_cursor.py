"""The typed incremental cursor: maxima by meaning, never backwards, lookback in the value's own form."""

from __future__ import annotations

from datetime import timedelta

import pytest

from croft.core.problems import CroftError
from croft.engine import cursor as cursor_module
from croft.engine.cursor import (
    Cursor,
    default_lookback,
    greatest,
    parse_lookback,
    parse_timestamp,
    since_for,
    since_value,
    track,
)


def test_public_names_are_sorted_and_exist() -> None:
    assert cursor_module.__all__ == sorted(cursor_module.__all__)
    assert all(hasattr(cursor_module, name) for name in cursor_module.__all__)


@pytest.mark.parametrize(
    ("values", "expected", "kind"),
    [
        pytest.param([9, 10, 2], 10, "number", id="ints-numerically-not-lexically"),
        pytest.param([1, 2.5, 2], 2.5, "number", id="ints-and-floats-together"),
        pytest.param(
            ["2026-06-24T10:00:00Z", "2026-06-24T11:30:00+02:00", "2026-06-24T09:45:00Z"],
            "2026-06-24T10:00:00Z",
            "timestamp",
            id="offsets-compare-as-instants",
        ),
        pytest.param(
            ["2026-06-24", "2026-06-23T23:00:00-03:00"],
            "2026-06-23T23:00:00-03:00",
            "timestamp",
            id="date-and-datetime-mixed",
        ),
        pytest.param(["b", "a10", "a9"], "b", "string", id="text-lexically"),
        pytest.param(["2026-06-24", "zzz"], "zzz", "string", id="one-non-timestamp-makes-it-text"),
        pytest.param([None, 3, None], 3, "number", id="nulls-are-ignored"),
    ],
)
def test_loaded_maximum_follows_the_values_meaning(values: list, expected: object, kind: str) -> None:
    result = track("f", values)
    assert result is not None
    assert (result.value, result.type) == (expected, kind)


def test_the_original_text_is_kept_not_a_normalized_instant() -> None:
    result = track("f", ["2026-06-24T12:00:00.5+02:00"])
    assert result == Cursor("2026-06-24T12:00:00.5+02:00", "timestamp")


def test_no_values_leave_the_saved_cursor_unchanged() -> None:
    saved = Cursor(5, "number")
    assert track("f", [], saved) is saved
    assert track("f", [None, None], saved) is saved
    assert track("f", []) is None


def test_cursor_never_moves_backwards() -> None:
    saved = Cursor("2026-06-24T10:00:00Z", "timestamp")
    assert track("f", ["2026-06-01T00:00:00Z"], saved) == saved
    assert (
        greatest(saved, Cursor("2026-06-24T12:00:00+02:00", "timestamp")) == saved
    )  # same instant: saved wins


def test_a_later_load_moves_the_cursor_forward() -> None:
    saved = Cursor(100, "number", "s")
    assert track("f", [50, 150, 120], saved) == Cursor(150, "number", "s")


@pytest.mark.parametrize(
    ("saved", "value"),
    [
        pytest.param(Cursor(5, "number"), "2026-06-24", id="text-after-number"),
        pytest.param(Cursor("2026-06-24", "timestamp"), 5, id="number-after-timestamp"),
        pytest.param(Cursor("2026-06-24", "timestamp"), "not a time", id="text-after-timestamp"),
    ],
)
def test_a_type_other_than_the_saved_one_is_cursor_invalid(saved: Cursor, value: object) -> None:
    with pytest.raises(CroftError) as caught:
        track("f", [value], saved)
    assert caught.value.code == "CURSOR_INVALID"


def test_a_text_cursor_accepts_values_that_look_like_timestamps() -> None:
    assert track("f", ["2026-06-24"], Cursor("abc", "string")) == Cursor("abc", "string")


@pytest.mark.parametrize("value", [True, {"a": 1}, [1]], ids=["bool", "dict", "list"])
def test_values_no_cursor_can_hold_are_refused(value: object) -> None:
    with pytest.raises(CroftError) as caught:
        track("f", [value])
    assert caught.value.code == "CURSOR_INVALID"


def test_numbers_and_text_in_one_first_load_are_refused() -> None:
    with pytest.raises(CroftError) as caught:
        track("f", [1, "a"])
    assert caught.value.code == "CURSOR_INVALID"


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2026-06-24", "2026-06-24T00:00:00+00:00"),
        ("2026-06-24T10:00", "2026-06-24T10:00:00+00:00"),
        ("2026-06-24 10:00:00.123456789Z", "2026-06-24T10:00:00.123456+00:00"),
        ("2026-06-24T10:00:00-0500", "2026-06-24T10:00:00-05:00"),
    ],
)
def test_iso_forms_parse_naive_as_utc(text: str, iso: str) -> None:
    moment = parse_timestamp(text)
    assert moment is not None and moment.isoformat() == iso


@pytest.mark.parametrize("text", ["20260624", "2026-13-01", "June 24", "1719223200"])
def test_things_that_are_not_iso_timestamps(text: str) -> None:
    assert parse_timestamp(text) is None


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("30 days", timedelta(days=30)),
        ("1s", timedelta(seconds=1)),
        ("2h", timedelta(hours=2)),
        ("90 min", timedelta(minutes=90)),
        ("1 week", timedelta(weeks=1)),
        ("250ms", timedelta(milliseconds=250)),
        (None, timedelta(0)),
        (5, timedelta(seconds=5)),
    ],
)
def test_lookback_durations(text: object, delta: timedelta) -> None:
    assert parse_lookback(text) == delta  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["soon", "3 fortnights", "-1s", ""])
def test_bad_lookbacks_are_asset_invalid(text: str) -> None:
    with pytest.raises(CroftError) as caught:
        parse_lookback(text)
    assert caught.value.code == "ASSET_INVALID"


@pytest.mark.parametrize(
    ("saved", "lookback", "since"),
    [
        pytest.param(
            Cursor("2026-06-24T10:00:00Z", "timestamp"), "30 days", "2026-05-25T10:00:00Z", id="Z-kept"
        ),
        pytest.param(
            Cursor("2026-06-24T10:00:00.250+02:00", "timestamp"),
            "1s",
            "2026-06-24T09:59:59.250+02:00",
            id="offset-and-fraction-kept",
        ),
        pytest.param(
            Cursor("2026-06-24 10:00", "timestamp"), "2h", "2026-06-24 08:00", id="space-and-minutes"
        ),
        pytest.param(Cursor("2026-06-24", "timestamp"), "1s", "2026-06-23", id="date-stays-a-date"),
        pytest.param(Cursor(1_700_000_000, "number", "s"), "2h", 1_699_992_800, id="epoch-seconds"),
        pytest.param(Cursor(1_700_000_000_000, "number", "ms"), "1s", 1_699_999_999_000, id="epoch-ms"),
        pytest.param(Cursor(42, "number"), "0s", 42, id="no-lookback-on-ids"),
    ],
)
def test_since_is_saved_minus_lookback_in_the_saved_form(saved: Cursor, lookback: str, since: object) -> None:
    assert since_value(saved, lookback) == since


def test_keyed_time_cursors_default_to_one_second_back() -> None:
    stamp = Cursor("2026-06-24T10:00:00Z", "timestamp")
    assert default_lookback(stamp, keyed=True) == timedelta(seconds=1)
    assert since_value(stamp, keyed=True) == "2026-06-24T09:59:59Z"
    assert since_value(stamp, keyed=False) == "2026-06-24T10:00:00Z"
    assert since_value(Cursor(7, "number"), keyed=True) == 7
    assert since_value(None, "30 days") is None


def test_a_lookback_on_a_plain_id_cursor_is_a_config_error() -> None:
    with pytest.raises(CroftError) as caught:
        since_value(Cursor(42, "number"), "1 day")
    assert caught.value.code == "ASSET_INVALID"


def test_since_for_reads_the_incremental_option() -> None:
    assert since_for(None, "updated_at", keyed=True) is None
    assert since_for("2026-06-24T10:00:00Z", "updated_at", keyed=True) == "2026-06-24T09:59:59Z"
    option = {"field": "created", "unit": "s", "lookback": "1 day"}
    assert since_for(1_700_000_000, option, keyed=True) == 1_699_913_600
    assert since_for("2026-06-24", {"field": "d"}, keyed=True, cursor_type="string") == "2026-06-24"
