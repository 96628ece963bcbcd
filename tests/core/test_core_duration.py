"""Durations both ways: the one reader and the one writer of a length of time."""

from __future__ import annotations

import pytest

from croft.core.duration import parse_seconds, words


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 ms"),
        (0.3, "300 ms"),
        (1, "1 s"),
        (12.5, "12.5 s"),
        (60, "1 min"),
        (90, "90 s"),
        (119, "119 s"),
        (120, "2 min"),
        (600, "10 min"),
        (7140, "119 min"),  # whole minutes below two hours
        (7199, "2 h"),  # 119.98 minutes round to two hours
        (7200, "2 h"),
        (7 * 3600 + 12 * 60, "7 h 12 min"),
        (47 * 3600 + 59 * 60, "47 h 59 min"),
        (2 * 86400, "2 days"),
        (3 * 86400 + 4 * 3600 + 59, "3 days 4 h"),
    ],
)
def test_words(seconds: float, text: str) -> None:
    assert words(seconds) == text


@pytest.mark.parametrize("text", ["45 s", "10 min", "7 h 12 min", "3 days 4 h"])
def test_what_words_writes_reads_back(text: str) -> None:
    assert words(parse_seconds(text, bare_text=False) or -1) == text


def test_a_negative_length_is_nothing() -> None:
    assert words(-5) == "0 ms"
