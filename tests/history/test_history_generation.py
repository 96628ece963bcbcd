"""The history's generation: every write the due decision could see bumps it, in the same transaction;
the heartbeat and the settings never do (or the idle memo would never hold)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest

from croft.core.clock import parse_instant
from croft.core.identity import ProcessIdentity
from croft.core.problems import problem
from croft.history import catalog, leases, runs, state
from croft.history.db import immediate
from croft.history.migrations import GENERATION_TABLES
from croft.history.prune import prune_history
from croft.scheduler.tick.memo import history_fingerprint
from croft.scheduler.tick.settle import note_spawn

WHO = ProcessIdentity(pid=4242, start="12345", boot="boot-a")


@pytest.fixture
def conn(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> sqlite3.Connection:
    """The shared history with one run in it."""
    monkeypatch.setenv("CROFT_NOW", "2026-01-02T09:00:00Z")
    runs.create_run(conn, run_id="r_1", trigger="manual", human=True, argv=[], who=WHO)
    return conn


def generation(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT n FROM generation").fetchone()[0])


def _step(conn: sqlite3.Connection) -> None:
    runs.start_step(conn, run_id="r_1", asset="a", attempt=1, reason="x", code_hash=None, log_path=None)


WRITES: dict[str, Callable[[sqlite3.Connection], object]] = {
    "a run starts": lambda c: runs.create_run(
        c, run_id="r_2", trigger="schedule", human=False, argv=[], who=WHO
    ),
    "a step starts": _step,
    "a step ends": lambda c: (_step(c), runs.finish_step(c, run_id="r_1", asset="a", attempt=1, status="ok")),
    "a step is skipped": lambda c: runs.record_skipped_step(
        c, run_id="r_1", asset="b", reason="x", error=None
    ),
    "a run ends": lambda c: runs.finish_run(c, "r_1", "succeeded", {}),
    "a run is ended from outside": lambda c: runs.mark_crashed(c, "r_1", problem("RUN_CRASHED", "m", "h")),
    "a lease is taken": lambda c: leases.acquire(c, ["a"], "r_1", WHO),
    "the schedule state": lambda c: state.put_schedule_state(c, "a", approved_code_hash="h"),
    "the catalog": lambda c: catalog.put_entry(c, "a", {"rows": 1}),
    "the tick records a fire (raw SQL)": lambda c: note_spawn(
        c, "r_3", ["a"], parse_instant("2026-01-02T09:00:00Z"), {"a": "2026-01-02T09:00:00.000Z"}, ["a"]
    ),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_every_write_the_decision_reads_bumps_the_generation(conn: sqlite3.Connection, name: str) -> None:
    before, fingerprint = generation(conn), history_fingerprint(conn)
    WRITES[name](conn)
    assert generation(conn) > before and history_fingerprint(conn) != fingerprint


def test_the_heartbeat_and_the_settings_leave_it_alone(conn: sqlite3.Connection) -> None:
    before = history_fingerprint(conn)
    state.write_tick(conn, WHO, "2026-01-02T09:00:00.000Z")
    state.claim_tick(conn, WHO)
    state.release_tick(conn, WHO)
    state.put_setting(conn, "schedule.idle", {"at": "x"})
    assert history_fingerprint(conn) == before


def test_a_write_rolled_back_leaves_the_generation_as_it_was(conn: sqlite3.Connection) -> None:
    before = generation(conn)
    with pytest.raises(RuntimeError), immediate(conn):
        conn.execute("UPDATE runs SET status = 'failed'")
        raise RuntimeError("the write failed")
    assert generation(conn) == before


def test_pruning_bumps_it(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    runs.finish_run(conn, "r_1", "succeeded", {})
    monkeypatch.setenv("CROFT_NOW", "2026-01-01T09:00:00Z")
    runs.create_run(conn, run_id="r_0", trigger="manual", human=True, argv=[], who=WHO)
    runs.finish_run(conn, "r_0", "succeeded", {})
    before = generation(conn)
    pruned = prune_history(conn, now=parse_instant("2026-03-01T00:00:00Z"), keep_days=30)
    assert pruned.runs >= 1 and generation(conn) > before


def test_every_table_the_decision_reads_has_its_three_triggers(conn: sqlite3.Connection) -> None:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    for table in GENERATION_TABLES:
        assert {f"{table}_{event}_generation" for event in ("insert", "update", "delete")} <= names
