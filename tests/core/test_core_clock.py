from datetime import UTC, datetime

import pytest

from croft.core import clock
from croft.core.problems import CroftError


def test_croft_now_accepts_iso_with_zulu(monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:30:00Z")
    assert clock.now() == datetime(2026, 3, 8, 9, 30, tzinfo=UTC)


def test_croft_now_accepts_an_offset_and_converts_to_utc(monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:30:00-08:00")
    assert clock.now() == datetime(2026, 3, 8, 17, 30, tzinfo=UTC)


def test_croft_now_accepts_epoch_milliseconds(monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "1772962200000")
    assert clock.to_iso(clock.now()) == "2026-03-08T09:30:00.000Z"


def test_croft_now_that_is_not_a_time_is_clock_invalid_with_a_hint(monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "yesterday-ish")
    with pytest.raises(CroftError) as caught:
        clock.now()
    assert caught.value.code == "CLOCK_INVALID"
    assert "yesterday-ish" in caught.value.problem.message
    assert "CROFT_NOW" in caught.value.problem.hint


def test_without_croft_now_the_real_clock_is_used(monkeypatch):
    monkeypatch.delenv("CROFT_NOW", raising=False)
    before = datetime.now(UTC)
    assert before <= clock.now() <= datetime.now(UTC)


def test_iso_text_sorts_as_time():
    early = clock.to_iso(datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=UTC))
    late = clock.to_iso(datetime(2026, 1, 2, 3, 4, 5, 7000, tzinfo=UTC))
    assert early == "2026-01-02T03:04:05.006Z"
    assert early < late
    assert clock.from_iso(early) == datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
