"""Asset leases and the tick claim: all-or-nothing, live holders win, dead holders are taken over."""

from __future__ import annotations

import subprocess
import sys

import pytest

from croft.core import identity
from croft.core.identity import ProcessIdentity
from croft.core.problems import CroftError
from croft.history import db, leases, state
from croft.history.leases import Holder


@pytest.fixture
def me() -> ProcessIdentity:
    return identity.current()


@pytest.fixture(scope="module")
def dead() -> ProcessIdentity:
    """The identity of a real process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    who = ProcessIdentity(pid=child.pid, start=identity.start_time(child.pid), boot=identity.boot_id())
    assert identity.is_alive(who)
    child.communicate()
    assert not identity.is_alive(who)
    return who


def leased(conn) -> dict[str, str]:
    return {h.asset: h.run_id for h in leases.holders(conn)}


def test_free_assets_are_all_leased_to_the_run(conn, me, monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:00:00Z")
    assert leases.acquire(conn, ["orders", "users", "orders"], "r_a", me) == []
    assert leases.holders(conn) == [
        Holder("orders", "r_a", me, "2026-03-08T09:00:00.000Z"),
        Holder("users", "r_a", me, "2026-03-08T09:00:00.000Z"),
    ]


def test_one_live_holder_blocks_the_whole_request_and_nothing_is_taken(conn, me):
    assert leases.acquire(conn, ["users"], "r_a", me) == []
    blocking = leases.acquire(conn, ["orders", "users", "report"], "r_b", me)
    assert [(h.asset, h.run_id, h.who) for h in blocking] == [("users", "r_a", me)]
    assert leased(conn) == {"users": "r_a"}


def test_a_dead_holders_lease_is_taken_over(conn, me, dead):
    assert leases.acquire(conn, ["orders", "users"], "r_dead", dead) == []
    assert leases.acquire(conn, ["orders"], "r_b", me) == []
    assert leased(conn) == {"orders": "r_b", "users": "r_dead"}
    assert leases.holders(conn)[0].who == me


def test_a_reused_pid_with_another_start_time_counts_as_dead(conn, me):
    impostor = ProcessIdentity(pid=me.pid, start="1", boot=me.boot)  # same pid, an older process
    assert leases.acquire(conn, ["orders"], "r_old", impostor) == []
    assert leases.acquire(conn, ["orders"], "r_new", me) == []
    assert leased(conn) == {"orders": "r_new"}


def test_a_run_may_ask_again_for_leases_it_holds(conn, me, monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:00:00Z")
    assert leases.acquire(conn, ["orders"], "r_a", me) == []
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:05:00Z")
    assert leases.acquire(conn, ["orders", "users"], "r_a", me) == []
    assert {h.asset: h.since for h in leases.holders(conn)} == {
        "orders": "2026-03-08T09:00:00.000Z",
        "users": "2026-03-08T09:05:00.000Z",
    }


def test_release_drops_only_the_runs_own_leases(conn, me):
    leases.acquire(conn, ["orders", "users", "report"], "r_a", me)
    leases.release(conn, "r_b")
    assert leased(conn) == {"orders": "r_a", "users": "r_a", "report": "r_a"}
    leases.release(conn, "r_a", ["orders"])
    assert leased(conn) == {"users": "r_a", "report": "r_a"}
    leases.release(conn, "r_a", [])
    leases.release(conn, "r_a")
    assert leased(conn) == {}


def test_release_dead_clears_only_leases_of_ended_processes(conn, me, dead):
    leases.acquire(conn, ["orders"], "r_dead", dead)
    leases.acquire(conn, ["users"], "r_live", me)
    dropped = leases.release_dead(conn)
    assert [(h.asset, h.run_id) for h in dropped] == [("orders", "r_dead")]
    assert leased(conn) == {"users": "r_live"}


def test_leases_are_taken_under_the_write_lock(tmp_path, me):
    first = db.open_history(tmp_path)
    second = db.connect(tmp_path / "runs.sqlite")
    second.execute("PRAGMA busy_timeout = 0")
    try:
        with db.immediate(first):
            with pytest.raises(CroftError) as caught:
                leases.acquire(second, ["orders"], "r_b", me)
            assert (caught.value.code, caught.value.retryable) == ("DB_BUSY", True)
        assert leases.acquire(second, ["orders"], "r_b", me) == []
        assert leased(first) == {"orders": "r_b"}
    finally:
        first.close()
        second.close()


def test_leases_have_a_json_shape_for_status(me):
    holder = Holder("orders", "r_a", me, "2026-03-08T09:00:00.000Z")
    assert holder.to_dict() == {
        "asset": "orders",
        "runId": "r_a",
        "since": "2026-03-08T09:00:00.000Z",
        "pid": me.pid,
        "procStart": me.start,
        "bootId": me.boot,
    }


# -- the project's tick claim ----------------------------------------------------------------------------


def test_a_second_live_tick_is_refused_with_the_holder(conn, me):
    assert state.claim_tick(conn, me) is None
    assert state.claim_tick(conn, me) is None  # the holder may claim again
    other = ProcessIdentity(pid=me.pid + 1, start="0", boot=me.boot)
    assert state.claim_tick(conn, other) == me
    assert state.read_tick(conn)["pid"] == me.pid  # type: ignore[index]


def test_a_dead_ticks_claim_is_taken_over_and_release_keeps_the_heartbeat(conn, me, dead):
    state.write_tick(conn, dead, "2026-03-08T09:00:00.000Z")
    assert state.claim_tick(conn, me) is None
    tick = state.read_tick(conn)
    assert tick is not None and (tick["pid"], tick["heartbeat_at"]) == (me.pid, "2026-03-08T09:00:00.000Z")
    state.release_tick(conn, dead)  # not the holder any more: nothing happens
    assert state.read_tick(conn)["pid"] == me.pid  # type: ignore[index]
    state.release_tick(conn, me)
    assert state.read_tick(conn) == {
        "pid": None,
        "proc_start": None,
        "boot_id": None,
        "heartbeat_at": "2026-03-08T09:00:00.000Z",
    }
