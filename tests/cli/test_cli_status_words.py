"""issue 21 (3): the STATE and LAST RUN words of ``croft status`` tell the truth, and the streak they count."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from croft.cli.status import last_run_words, state_words
from croft.history import runs

NOW = datetime(2026, 12, 1, 9, 1, tzinfo=UTC)  # a Tuesday; the reader is in Europe/London (conftest)


def asset(**over: object) -> dict:
    base = {"problems": [], "stale": False, "staleReasons": [], "kind": "ingest", "failing": None}
    return {**base, "schedule": {"schedule": "every 5 minutes"}, **over}


def test_fresh_only_while_nothing_says_otherwise() -> None:
    assert state_words(asset(), NOW, scheduler_stale=False) == "fresh"
    # a dead scheduler keeps a scheduled asset from being called fresh; an unscheduled one is as it was
    assert state_words(asset(), NOW, True) == "not kept fresh: the scheduler is not ticking"
    assert state_words(asset(schedule={"schedule": None}), NOW, True) == "fresh"
    six = {"count": 6, "since": "2026-11-30T09:00:00.000Z"}
    assert state_words(asset(failing=six), NOW, False) == "failing: 6 in a row since Mon 09:00"
    one = {"count": 1, "since": "2026-12-01T08:55:00.000Z"}
    assert state_words(asset(failing=one), NOW, True) == "failing since 08:55"


def test_last_run_says_retrying_while_a_retry_waits() -> None:
    failed = {"status": "failed", "at": "2026-12-01T09:00:10.000Z", "retryAt": "2026-12-01T09:02:00.000Z"}
    assert last_run_words(failed, NOW) == "retrying at 09:02"
    assert last_run_words({**failed, "retryAt": "2026-12-01T09:00:40.000Z"}, NOW) == "failed 09:00"
    assert last_run_words({**failed, "retryAt": None}, NOW) == "failed 09:00"
    assert last_run_words(None, NOW) == "never"


@pytest.fixture
def steps_db() -> sqlite3.Connection:
    c = sqlite3.connect(":memory:")
    c.execute("CREATE TABLE steps (run_id TEXT, asset TEXT, attempt INT, status TEXT, started_at TEXT)")
    return c


def test_the_streak_counts_runs_by_their_last_attempt_back_to_the_last_success(steps_db) -> None:
    rows = [
        ("r1", "a", 1, "ok", "2026-11-30T08:00:00.000Z"),
        ("r2", "a", 1, "failed", "2026-11-30T09:00:00.000Z"),
        ("r3", "a", 1, "failed", "2026-11-30T10:00:00.000Z"),
        ("r3", "a", 2, "failed", "2026-11-30T10:00:30.000Z"),
        ("r4", "a", 0, "skipped", "2026-11-30T11:00:00.000Z"),
        ("r5", "a", 1, "crashed", "2026-11-30T12:00:00.000Z"),
    ]
    steps_db.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", rows)
    assert runs.failing_streak(steps_db, "a") == (3, "2026-11-30T09:00:00.000Z")
    steps_db.execute("INSERT INTO steps VALUES ('r6', 'a', 2, 'ok', '2026-11-30T13:00:00.000Z')")
    assert runs.failing_streak(steps_db, "a") == (0, None)
    assert runs.failing_streak(steps_db, "nobody") == (0, None)
