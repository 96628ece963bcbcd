"""The one way an instant reads for a person: local, short, with its distance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from croft.core import when
from croft.core.zones import zone_named

NOW = datetime(2026, 12, 1, 7, 24, 30, tzinfo=UTC)  # a Tuesday
LONDON, BERLIN = zone_named("Europe/London"), zone_named("Europe/Berlin")


@pytest.mark.parametrize(
    ("instant", "zone", "text"),
    [
        ("2026-12-01T07:22:02.605Z", LONDON, "07:22"),
        ("2026-12-01T07:22:02.605Z", BERLIN, "08:22"),
        ("2026-12-01T23:30:00Z", BERLIN, "Wed 00:30"),  # tomorrow in Berlin, still today in UTC
        ("2026-11-24T09:00:00Z", LONDON, "Nov 24 09:00"),  # seven days back: the date
        ("2026-11-25T09:00:00Z", LONDON, "Wed 09:00"),  # six days back: the weekday
        ("2026-12-07T09:00:00Z", LONDON, "Mon 09:00"),
        ("2025-12-31T23:59:00Z", LONDON, "Dec 31 2025 23:59"),
    ],
)
def test_clock_is_local_and_as_short_as_today_allows(instant: str, zone: object, text: str) -> None:
    assert when.clock(instant, NOW, zone) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("instant", "text"),
    [
        ("2026-12-01T07:24:10Z", "just now"),
        ("2026-12-01T07:25:00Z", "in under a minute"),
        ("2026-12-01T07:22:02Z", "2 min ago"),
        ("2026-12-01T08:00:00Z", "in 36 min"),
        ("2026-11-30T00:12:30Z", "31 h 12 min ago"),
        ("2026-11-27T07:24:30Z", "4 days ago"),
    ],
)
def test_relative_says_the_distance_in_duration_words(instant: str, text: str) -> None:
    assert when.relative(instant, NOW) == text


def test_moment_is_the_clock_and_the_distance() -> None:
    assert when.moment("2026-12-01T08:00:00Z", NOW, LONDON) == "08:00 (in 36 min)"


def test_the_readers_zone_comes_from_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    _, name = when.local_zone()
    assert name == "Europe/Berlin" and when.clock("2026-12-01T07:22:00Z", NOW) == "08:22"
    assert when.zone_note("Europe/London") == "times in Europe/Berlin"
    assert when.zone_note("Europe/Berlin") is None
    monkeypatch.setenv("TZ", "UTC")
    assert when.zone_note("Etc/UTC") is None
