"""The scheduling setting: one reader and one rule for on / off / paused, shared by every part of croft."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from croft.history.db import open_history, open_memory
from croft.history.state import put_setting
from croft.scheduler.setting import (
    Scheduling,
    effective_state,
    read_scheduling,
    read_scheduling_file,
    write_scheduling,
)

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def test_nothing_stored_reads_as_off() -> None:
    conn = open_memory()
    assert read_scheduling(conn) == Scheduling(state="off")


def test_malformed_values_read_as_off() -> None:
    conn = open_memory()
    for bad in ["on", {"state": "maybe"}, [], {"state": "on", "via": "carrier pigeon", "since": "soon"}]:
        put_setting(conn, "scheduling", bad)
        got = read_scheduling(conn)
        assert got.via is None and got.since is None
        assert got.state == ("on" if isinstance(bad, dict) and bad.get("state") == "on" else "off")


def test_turning_on_records_since_and_a_second_on_keeps_it() -> None:
    conn = open_memory()
    first = write_scheduling(conn, "on", NOON, via="os-job")
    assert first.since == "2026-03-02T12:00:00.000Z"
    again = write_scheduling(conn, "on", NOON + timedelta(hours=1), via="os-job")
    assert again.since == first.since
    switched = write_scheduling(conn, "on", NOON + timedelta(hours=2), via="serve")
    assert switched.since == "2026-03-02T14:00:00.000Z"
    assert read_scheduling(conn) == switched


def test_a_pause_ends_by_itself_at_its_instant() -> None:
    conn = open_memory()
    write_scheduling(conn, "on", NOON, via="os-job")
    paused = write_scheduling(conn, "paused", NOON, via="os-job", paused_until=NOON + timedelta(hours=2))
    assert effective_state(paused, NOON + timedelta(minutes=119)) == "paused"
    assert effective_state(paused, NOON + timedelta(hours=2)) == "on"
    forever = write_scheduling(conn, "paused", NOON, via="os-job")
    assert forever.paused_until is None
    assert effective_state(forever, NOON + timedelta(days=400)) == "paused"


def test_off_forgets_how_it_ticked() -> None:
    conn = open_memory()
    write_scheduling(conn, "on", NOON, via="serve")
    off = write_scheduling(conn, "off", NOON, via="serve")
    assert off == Scheduling(state="off")


def test_file_reader_never_creates_the_history(tmp_path) -> None:
    state = tmp_path / ".croft"
    assert read_scheduling_file(state) == Scheduling()
    assert not state.exists()
    conn = open_history(state)
    write_scheduling(conn, "on", NOON, via="os-job")
    conn.close()
    assert read_scheduling_file(state).state == "on"
    (state / "runs.sqlite").write_bytes(b"")  # an empty database: nothing recorded, so off
    assert read_scheduling_file(state) == Scheduling()


def test_a_history_that_cannot_be_read_is_its_problem_never_off(tmp_path) -> None:
    """A broken runs.sqlite once read as "scheduling is off" (ok: true) everywhere but croft status."""
    import pytest

    from croft.core.problems import CroftError

    state = tmp_path / ".croft"
    conn = open_history(state)
    write_scheduling(conn, "on", NOON, via="os-job")
    conn.close()
    path = state / "runs.sqlite"
    path.write_bytes(b"not a database at all, not even close" * 200)
    with pytest.raises(CroftError) as caught:
        read_scheduling_file(state)
    assert caught.value.code == "HISTORY_CORRUPT"
    assert str(path) in caught.value.problem.message
    assert caught.value.problem.fix["command"].startswith("mv ")
