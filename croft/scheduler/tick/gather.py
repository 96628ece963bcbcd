"""Reading what the due decision needs from runs.sqlite, in a handful of queries (tick, status, run --due).

The decision itself is pure (``scheduler.due``); this is the thin shell that fills a ``DueInput``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.identity import is_alive
from croft.engine.peek import committed_attempts
from croft.history import catalog, leases, state
from croft.history.db import translate_sqlite_errors
from croft.history.migrations import COST_GUARD_WHERE
from croft.scheduler.due import AssetInfo, DueInput, FailedStart
from croft.scheduler.pause import read_pauses
from croft.scheduler.setting import Scheduling
from croft.scheduler.tick.tableholds import HELD_KEY, live, still_lost

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "due_input",
    "landed_writes",
    "last_ok_starts",
    "latest_steps",
    "live_leases",
    "scheduled_cost_guard",
]


@translate_sqlite_errors("reading the last successful steps")
def last_ok_starts(conn: sqlite3.Connection, assets: Iterable[str]) -> dict[str, str]:
    """Each asset's latest successful step start: one probe of the (asset, status, started_at) index per
    asset, so the cost is the number of assets, never the length of the history."""
    out: dict[str, str] = {}
    for asset in assets:
        row = conn.execute(_LAST_OK, (asset,)).fetchone()
        if row is not None and row[0] is not None:
            out[asset] = row[0]
    return out


_LAST_OK = "SELECT MAX(started_at) FROM steps WHERE asset = ? AND status IN ('ok', 'unchanged')"
_LATEST = "SELECT * FROM steps WHERE asset = ? ORDER BY started_at DESC, attempt DESC, rowid DESC LIMIT 1"


@translate_sqlite_errors("reading the latest steps")
def latest_steps(conn: sqlite3.Connection, assets: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each asset's most recent step row (any status), as ``runs`` would give it; ties on the start
    time go to the highest attempt, then the latest row. One probe of the (asset, started_at, attempt)
    index per asset (its last entry), so this stays as cheap at 100k runs as at 100."""
    out: dict[str, dict[str, Any]] = {}
    for asset in assets:
        r = conn.execute(_LATEST, (asset,)).fetchone()
        if r is None:
            continue
        step = dict(r)
        step["error"] = json.loads(step["error"]) if step.get("error") else None
        out[asset] = step
    return out


@translate_sqlite_errors("reading the cost guard's records")
def scheduled_cost_guard(conn: sqlite3.Connection) -> frozenset[str]:
    """Assets a scheduled run stopped at the cost guard, with no successful run by a person since.

    The guard's steps are read through their partial index (``steps_cost_guard``), which holds only
    them, so the other steps of the history are never read."""
    rows = conn.execute(
        "SELECT s.asset, MAX(s.started_at) AS at FROM steps s JOIN runs r ON r.id = s.run_id"
        f" WHERE r.human = 0 AND s.{COST_GUARD_WHERE} GROUP BY s.asset"
    ).fetchall()
    held = set()
    for row in rows:
        later = conn.execute(
            "SELECT 1 FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.asset = ? AND r.human = 1"
            " AND s.status IN ('ok', 'unchanged') AND s.started_at > ? LIMIT 1",
            (row["asset"], row["at"]),
        ).fetchone()
        if later is None:
            held.add(row["asset"])
    return frozenset(held)


def live_leases(conn: sqlite3.Connection, mine: str | None = None) -> dict[str, str]:
    """asset -> run id, for leases whose holder is alive (and is not run ``mine``)."""
    return {h.asset: h.run_id for h in leases.holders(conn) if h.run_id != mine and is_alive(h.who)}


def due_input(
    conn: sqlite3.Connection | None,
    assets: Mapping[str, AssetInfo],
    *,
    now: datetime,
    tz: str,
    setting: Scheduling,
    starting: Sequence[tuple[str, Sequence[str]]] = (),
    failed_starts: Sequence[FailedStart] = (),
    rollbacks: Mapping[str, str | None] | None = None,
    landed: Mapping[str, str] | None = None,
    latest: dict[str, dict[str, Any]] | None = None,
    next_fires: bool = True,
    database: Path | None = None,
    jitter_s: float | None = None,
    quiet: Sequence[str] = (),
) -> DueInput:
    """The DueInput for a project; ``conn`` None (no runs.sqlite) means nothing has happened yet.

    ``landed`` adds crashed steps whose write the warehouse shows committed: they count as successes.
    ``database`` (the warehouse) lets a held lost table be looked at again: one restored lifts its hold.
    ``jitter_s`` and ``quiet``: croft.json's, for the ingests that set none of their own.
    """
    if conn is None:
        return DueInput(assets=assets, now=now, tz=tz, setting=setting, jitter_s=jitter_s, quiet=quiet)
    last_ok = last_ok_starts(conn, assets)
    for asset, at in (landed or {}).items():
        if at > last_ok.get(asset, ""):
            last_ok[asset] = at
    latest = dict(latest) if latest is not None else latest_steps(conn, assets)
    for asset in landed or {}:
        latest.pop(asset, None)
    entries = catalog.all_entries(conn)
    tables = live(state.get_setting(conn, HELD_KEY), last_ok)
    if tables and database is not None:
        tables = still_lost(tables, database, entries)
    return DueInput(
        assets=assets,
        now=now,
        tz=tz,
        setting=setting,
        state=state.all_schedule_state(conn),
        catalog=entries,
        last_ok=last_ok,
        latest=latest,
        large_reprocess=scheduled_cost_guard(conn),
        leases=live_leases(conn),
        starting=starting,
        failed_starts=failed_starts,
        rollbacks=rollbacks or {},
        next_fires=next_fires,
        tables=tables,
        pauses=read_pauses(conn),
        jitter_s=jitter_s,
        quiet=quiet,
    )


def landed_writes(database: Path, latest: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Crashed latest steps whose write the warehouse committed anyway (a crash after COMMIT, before the
    step row was finished): asset -> the step's start. The warehouse is looked into only when there is
    such a step."""

    crashed = [s for s in latest.values() if s["status"] == "crashed" and s["attempt"] >= 1]
    done = committed_attempts(database, [(s["asset"], s["run_id"], s["attempt"]) for s in crashed])
    return {s["asset"]: s["started_at"] for s in crashed if (s["asset"], s["run_id"], s["attempt"]) in done}
