"""The history reads behind the status page's pictures, each bounded by what its picture shows: the
7-day strip reads counts per asset, bucket and result (one grouped pass over the week's steps, no
rows), the timeline reads at most ``per_asset`` attempts of each asset in its window, and an asset's
page reads one page of its own attempts through the (asset, started_at) index."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

from croft.core.clock import to_iso
from croft.history.db import translate_sqlite_errors

if TYPE_CHECKING:
    from typing import Any

__all__ = ["asset_attempts", "step_buckets", "window_steps"]


@translate_sqlite_errors("counting the week's steps")
def step_buckets(
    conn: sqlite3.Connection, since: datetime, width_s: int
) -> dict[str, list[tuple[int, str, int]]]:
    """``{asset: [(bucket, status, count), ...]}`` for the steps started at or after ``since``, bucket
    ``i`` holding those started ``i * width_s`` to ``(i + 1) * width_s`` seconds after it."""
    start = int(since.timestamp())
    rows = conn.execute(
        "SELECT asset, (CAST(strftime('%s', started_at) AS INTEGER) - ?) / ? AS b, status, COUNT(*)"
        " FROM steps WHERE started_at >= ? GROUP BY asset, b, status",
        (start, width_s, to_iso(since)),
    )
    out: dict[str, list[tuple[int, str, int]]] = {}
    for asset, bucket, status, count in rows:
        out.setdefault(asset, []).append((int(bucket), status, int(count)))
    return out


@translate_sqlite_errors("reading the day's steps")
def window_steps(
    conn: sqlite3.Connection, since: datetime, per_asset: int
) -> dict[str, list[dict[str, Any]]]:
    """Each asset's attempts started at or after ``since``, newest first, at most ``per_asset`` each:
    ``{asset: [{runId, attempt, status, startedAt, finishedAt, trigger}]}``."""
    rows = conn.execute(
        "SELECT asset, run_id, attempt, status, started_at, finished_at, trigger FROM ("
        " SELECT s.asset, s.run_id, s.attempt, s.status, s.started_at, s.finished_at, r.trigger,"
        " ROW_NUMBER() OVER (PARTITION BY s.asset ORDER BY s.started_at DESC, s.attempt DESC) AS n"
        " FROM steps s LEFT JOIN runs r ON r.id = s.run_id WHERE s.started_at >= ?)"
        " WHERE n <= ? ORDER BY asset, started_at DESC",
        (to_iso(since), per_asset),
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for asset, run_id, attempt, status, started, finished, trigger in rows:
        out.setdefault(asset, []).append(
            {
                "runId": run_id,
                "attempt": attempt,
                "status": status,
                "startedAt": started,
                "finishedAt": finished,
                "trigger": trigger,
            }
        )
    return out


@translate_sqlite_errors("listing the asset's attempts")
def asset_attempts(
    conn: sqlite3.Connection,
    asset: str,
    *,
    statuses: tuple[str, ...] = (),
    trigger: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """The asset's attempts newest first, with their run's trigger, at most ``limit``; ``statuses`` keeps
    those results only and ``trigger`` those runs (``schedule``, ``manual``, ``agent`` or ``dagster``)."""
    where, args = ["s.asset = ?"], [asset]
    if statuses:
        where.append(f"s.status IN ({', '.join('?' for _ in statuses)})")
        args.extend(statuses)
    if trigger == "manual":  # a person's (a run recorded before triggers were kept counts as one)
        where.append("(r.trigger IS NULL OR r.trigger = 'manual')")
    elif trigger is not None:
        where.append("r.trigger = ?")
        args.append(trigger)
    rows = conn.execute(
        "SELECT s.run_id, s.attempt, s.status, s.reason, s.started_at, s.finished_at, s.error, s.log_path,"
        " s.rows_in, s.added, s.updated, s.unchanged, s.deleted, r.trigger"
        " FROM steps s LEFT JOIN runs r ON r.id = s.run_id"
        f" WHERE {' AND '.join(where)} ORDER BY s.started_at DESC, s.attempt DESC, s.rowid DESC LIMIT ?",
        (*args, limit),
    )
    out = []
    for r in rows:
        out.append(
            {
                "runId": r[0],
                "attempt": r[1],
                "status": r[2],
                "reason": r[3],
                "startedAt": r[4],
                "finishedAt": r[5],
                "error": json.loads(r[6]) if r[6] else None,
                "log": r[7],
                "rows": {"in": r[8], "added": r[9], "updated": r[10], "unchanged": r[11], "deleted": r[12]},
                "trigger": r[13],
            }
        )
    return out
