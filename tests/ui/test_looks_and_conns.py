"""The server's shared look, its connections and its watcher, in-process: one look per change however
many pages ask, nothing waits on another's look, a reader never wakes a page, and a flood of idle
connections leaves room for the owner."""

from __future__ import annotations

import socket
import sqlite3
import threading
from pathlib import Path
from typing import Any

from croft.history.db import open_history
from croft.ui.conns import Connections
from croft.ui.looks import Looks
from croft.ui.watch import Watcher, signature


def test_a_reader_never_changes_the_signature_and_a_write_does(tmp_path: Path) -> None:
    state = tmp_path / ".croft"
    conn = open_history(state)  # WAL mode, migrated: as croft leaves it
    conn.close()
    before = signature([state])
    for _ in range(3):  # what croft status and the page's own look do: open, read, close
        reader = sqlite3.connect(state / "runs.sqlite")
        reader.execute("SELECT COUNT(*) FROM runs").fetchone()
        reader.close()
    assert signature([state]) == before
    writer = open_history(state)
    writer.execute(
        "INSERT INTO settings (key, value) VALUES ('x', '1') ON CONFLICT(key) DO UPDATE SET value = '2'"
    )
    assert signature([state]) != before  # the WAL has a frame now
    writer.close()


class _Slow:
    """A look that takes as long as the test says, counting how often it is taken."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.taken = 0
        self.generation = 0

    def take(self) -> dict[str, Any]:
        self.taken += 1
        assert self.go.wait(30)
        return {"n": self.taken, "projects": []}


def test_pages_asking_during_a_look_share_it_and_the_last_look_never_waits() -> None:
    slow = _Slow()
    looks = Looks(slow.take, lambda: {"data": {"checks": []}}, lambda: slow.generation, lambda: None)
    got: list[dict[str, Any]] = []
    pages = [threading.Thread(target=lambda: got.append(looks.current())) for _ in range(5)]
    for p in pages:
        p.start()
    assert looks.latest() is None  # an asset's page asks this: answered at once, mid-look
    slow.go.set()
    for p in pages:
        p.join(30)
    assert slow.taken == 1 and [g["n"] for g in got] == [1] * 5
    assert looks.current()["n"] == 1  # nothing changed: the same look
    slow.generation += 1
    assert looks.current()["n"] == 2  # a change: a new one
    looks.forget()
    assert looks.current()["n"] == 3  # after an action: a new one


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    b.settimeout(5)
    return a, b


def test_at_the_cap_the_oldest_connection_without_a_header_makes_room() -> None:
    conns = Connections(cap=3)
    pairs = [_pair() for _ in range(4)]
    try:
        for server_side, _ in pairs[:3]:
            conns.admit(server_side)
        conns.answering(pairs[0][0])  # the owner's request is being answered: never dropped for room
        conns.admit(pairs[3][0])
        assert pairs[1][1].recv(1) == b""  # the oldest waiting one was hung up
        pairs[0][1].settimeout(0.01)
        try:
            pairs[0][1].recv(1)
            raise AssertionError("the connection being answered was hung up")
        except TimeoutError:
            pass
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def test_a_connection_past_its_header_deadline_is_dropped() -> None:
    conns = Connections(cap=8, header_s=0.0)
    (a, b), (c, d) = _pair(), _pair()
    try:
        conns.admit(a)
        conns.admit(c)
        conns.answering(c)
        conns.reap()
        assert b.recv(1) == b""
        d.settimeout(0.01)
        try:
            d.recv(1)
            raise AssertionError("a connection being answered was reaped")
        except TimeoutError:
            pass
    finally:
        for s in (a, b, c, d):
            s.close()


def test_the_watcher_sees_edits_and_heartbeats_but_not_reads(tmp_path: Path) -> None:
    root, state, beats = tmp_path / "p", tmp_path / "p" / ".croft", tmp_path / "home" / "idle-beats.json"
    (root / "assets").mkdir(parents=True)
    (root / "croft.json").write_text("{}")
    (root / "assets" / "orders.py").write_text("x = 1\n")
    beats.parent.mkdir()
    beats.write_text("{}")
    open_history(state).close()
    watcher = Watcher(
        lambda: [state], list, lambda: [root], lambda: [beats]
    )  # not started: looked at by hand
    first = watcher._look(None, 0)
    reader = sqlite3.connect(state / "runs.sqlite")
    reader.execute("SELECT 1 FROM runs").fetchall()
    reader.close()
    assert watcher._look(first, 4) == first  # a read is no change, on a round that looks at the sources too
    (root / "assets" / "orders.py").write_text("x = 22\n")  # an edit: seen on the sources' round
    assert watcher._look(first, 1) == first and watcher._look(first, 4) != first
    second = watcher._look(None, 0)
    beats.write_text('{"at": "2026-03-02T10:00:00Z"}')  # the minute's idle heartbeat: seen at once
    assert watcher._look(second, 1) != second
