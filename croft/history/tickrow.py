"""The tick row's singleton rule, in plain SQL over a connection already inside a write transaction.

``history.state`` wraps these in its transactions for the full tick; the idle tick (``scheduler.tick.memo``)
calls them directly, so both take and refuse the singleton by one rule without the idle tick loading
the rest of the history code.
"""

from __future__ import annotations

import sqlite3

from croft.core.identity import ProcessIdentity, is_alive

__all__ = ["claim", "heartbeat", "release"]


def claim(conn: sqlite3.Connection, who: ProcessIdentity) -> ProcessIdentity | None:
    """Make ``who`` the holder unless another live process holds it (returned instead); a dead holder
    is taken over. The heartbeat is left as it was."""
    row = conn.execute("SELECT pid, proc_start, boot_id FROM tick WHERE id = 1").fetchone()
    if row is not None and row[0] is not None:
        holder = ProcessIdentity(pid=row[0], start=row[1], boot=row[2])
        if holder != who and is_alive(holder):
            return holder
    conn.execute(
        "INSERT INTO tick (id, pid, proc_start, boot_id) VALUES (1, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, proc_start = excluded.proc_start,"
        " boot_id = excluded.boot_id",
        (who.pid, who.start, who.boot),
    )
    return None


def heartbeat(conn: sqlite3.Connection, who: ProcessIdentity, at: str) -> None:
    """Record the heartbeat and the tick process that wrote it."""
    conn.execute(
        "INSERT INTO tick (id, pid, proc_start, boot_id, heartbeat_at) VALUES (1, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, proc_start = excluded.proc_start,"
        " boot_id = excluded.boot_id, heartbeat_at = excluded.heartbeat_at",
        (who.pid, who.start, who.boot, at),
    )


def release(conn: sqlite3.Connection, who: ProcessIdentity) -> None:
    """Let go of the claim if ``who`` still holds it; the heartbeat stays."""
    conn.execute(
        "UPDATE tick SET pid = NULL, proc_start = NULL, boot_id = NULL WHERE id = 1 AND pid = ? AND proc_start IS ?",
        (who.pid, who.start),
    )
