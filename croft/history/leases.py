"""Asset leases: one run per asset at a time, taken all-or-nothing and given up by the run that holds them.

A lease names its holder's full process identity (pid, start time, boot id), so a lease left behind by a
process that died is recognised as dead and taken over instead of blocking the asset forever.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from croft.core.clock import now, to_iso
from croft.core.identity import ProcessIdentity, is_alive
from croft.history.db import immediate, translate_sqlite_errors

__all__ = ["Holder", "acquire", "holders", "release", "release_dead"]


@dataclass(frozen=True)
class Holder:
    """Who holds an asset's lease, and since when (ISO UTC)."""

    asset: str
    run_id: str
    who: ProcessIdentity
    since: str

    def to_dict(self) -> dict[str, object]:
        return {"asset": self.asset, "runId": self.run_id, "since": self.since, **self.who.to_dict()}


def _holder(row: sqlite3.Row) -> Holder:
    who = ProcessIdentity(pid=row["pid"], start=row["proc_start"], boot=row["boot_id"])
    return Holder(asset=row["asset"], run_id=row["run_id"], who=who, since=row["since"])


def _unique(assets: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(assets))


def acquire(conn: sqlite3.Connection, assets: list[str], run_id: str, who: ProcessIdentity) -> list[Holder]:
    """Lease every asset to ``run_id``, or none of them.

    Returns the live holders in the way (nothing taken), or an empty list when every lease is now ours.
    Leases held by dead processes are taken over; leases this run already holds are kept.
    """
    wanted = _unique(assets)
    if not wanted:
        return []
    marks = ", ".join("?" for _ in wanted)
    with immediate(conn, f"taking the leases of {', '.join(wanted)}"):
        rows = conn.execute(
            f"SELECT * FROM leases WHERE asset IN ({marks}) ORDER BY asset", wanted
        ).fetchall()
        blocking = [h for h in map(_holder, rows) if h.run_id != run_id and is_alive(h.who)]
        if blocking:
            return blocking
        since = to_iso(now())
        conn.executemany(
            "INSERT INTO leases (asset, run_id, pid, proc_start, boot_id, since) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(asset) DO UPDATE SET run_id = excluded.run_id, pid = excluded.pid,"
            " proc_start = excluded.proc_start, boot_id = excluded.boot_id, since = excluded.since"
            " WHERE leases.run_id IS NOT excluded.run_id",
            [(asset, run_id, who.pid, who.start, who.boot, since) for asset in wanted],
        )
    return []


def release(conn: sqlite3.Connection, run_id: str, assets: list[str] | None = None) -> None:
    """Give up this run's leases (all of them, or the named assets); other runs' leases are untouched."""
    with immediate(conn, f"releasing the leases of run {run_id}"):
        if assets is None:
            conn.execute("DELETE FROM leases WHERE run_id = ?", (run_id,))
            return
        wanted = _unique(assets)
        if wanted:
            marks = ", ".join("?" for _ in wanted)
            conn.execute(f"DELETE FROM leases WHERE run_id = ? AND asset IN ({marks})", [run_id, *wanted])


@translate_sqlite_errors("reading the asset leases")
def holders(conn: sqlite3.Connection) -> list[Holder]:
    """Every lease, by asset name, live or not."""
    return [_holder(r) for r in conn.execute("SELECT * FROM leases ORDER BY asset")]


def release_dead(conn: sqlite3.Connection) -> list[Holder]:
    """Drop the leases whose holder process is gone (reconcile's clean-up); returns what was dropped."""
    with immediate(conn, "releasing leases of ended processes"):
        dead = [h for h in map(_holder, conn.execute("SELECT * FROM leases")) if not is_alive(h.who)]
        conn.executemany(
            "DELETE FROM leases WHERE asset = ? AND run_id = ? AND pid = ?",
            [(h.asset, h.run_id, h.who.pid) for h in dead],
        )
    return sorted(dead, key=lambda h: h.asset)
