"""Runs and their steps in runs.sqlite: written when they start, finished only while still running.

Every attempt gets its row before its code runs, so a crash leaves evidence that reconcile can settle.
A finish only changes a row that is still ``running``: once reconcile has called a run crashed, a late
finish from a process that was merely slow cannot overwrite that verdict.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

from croft.core.clock import now, parse_instant, to_iso
from croft.core.identity import ProcessIdentity
from croft.core.problems import CroftError, Problem
from croft.history.db import immediate, translate_sqlite_errors

if TYPE_CHECKING:
    from typing import Any, Literal

__all__ = [
    "AGENT",
    "FAILED_STATUSES",
    "RUN_STATUSES",
    "STEP_STATUSES",
    "create_run",
    "end_running",
    "failing_streak",
    "finish_run",
    "finish_step",
    "get_run",
    "interrupt_run",
    "last_ok_step",
    "latest_step",
    "list_runs",
    "list_steps",
    "mark_crashed",
    "record_skipped_step",
    "running_runs",
    "start_step",
    "started_by",
    "started_by_words",
    "trigger_of",
    "update_run_summary",
]

# "busy": a run by hand that found another run writing what it needs, and started nothing (no step)
RUN_STATUSES = ("running", "succeeded", "failed", "crashed", "interrupted", "busy")
STEP_STATUSES = ("running", "ok", "failed", "skipped", "unchanged", "interrupted", "crashed")
# "--failed" means went wrong on its own; an interrupt is a person's choice, not a failure.
FAILED_STATUSES = ("failed", "crashed")
# A step that ran its code and left its table as it should be.
OK_STEP_STATUSES = ("ok", "unchanged")

# A run's ``trigger``: "manual" (a person at a terminal or the page), "schedule" (the tick), AGENT (a
# coding agent, through ``croft mcp`` or with CROFT_AGENT=1: ``human`` is 0, so it approves no code) or
# "dagster" (a materialization through croft.dagster, which approves no code either).
AGENT = "agent"
_STARTED_BY = {"schedule": "schedule", AGENT: "agent", "dagster": "dagster"}


def started_by(trigger: str | None) -> str:
    """Who started a run, in the words the history shows: "person", "agent", "schedule" or "dagster"."""
    return _STARTED_BY.get(trigger or "", "person")


_STARTER_WORDS = {
    "schedule": "scheduled",
    "agent": "by an agent",
    "dagster": "by Dagster",
    "person": "by hand",
}


def started_by_words(trigger: str | None) -> str:
    """Who started a run as a line of `croft logs` or the page says it ("scheduled", "by hand", ...)."""
    return _STARTER_WORDS[started_by(trigger)]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _error_json(error: Problem | dict[str, Any] | None) -> str | None:
    if error is None:
        return None
    return _dumps(error.to_dict() if isinstance(error, Problem) else error)


def _since_iso(since: datetime | str | None) -> str | None:
    """Normalise a lower bound to stored ISO-UTC text, so string comparison is time comparison."""
    if since is None:
        return None
    return to_iso(since if isinstance(since, datetime) else parse_instant(since))


def _run_dict(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out.pop("_rid", None)  # the merge key of an indexed --failed read
    out["human"] = bool(out["human"])
    out["argv"] = _loads(out["argv"])
    out["summary"] = _loads(out["summary"])
    return out


def _step_dict(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out.pop("_rid", None)
    out["error"] = _loads(out["error"])
    return out


def create_run(
    conn: sqlite3.Connection,
    *,
    run_id: str,
    trigger: Literal["manual", "schedule", "agent"] | str,
    human: bool,
    argv: list[str],
    who: ProcessIdentity,
) -> None:
    """Record a run as ``running`` from now, with the identity reconcile will test for liveness."""
    with immediate(conn, f"recording the start of run {run_id}"):
        conn.execute(
            "INSERT INTO runs (id, trigger, human, argv, pid, proc_start, boot_id, started_at, status)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running')",
            (run_id, trigger, int(human), _dumps(list(argv)), who.pid, who.start, who.boot, to_iso(now())),
        )


def finish_run(conn: sqlite3.Connection, run_id: str, status: str, summary: dict[str, Any]) -> bool:
    """End a run that is still running; returns False (and changes nothing) when it had already ended."""
    assert status in RUN_STATUSES and status != "running", f"not a final run status: {status}"
    with immediate(conn, f"recording the end of run {run_id}"):
        cursor = conn.execute(
            "UPDATE runs SET status = ?, finished_at = ?, summary = ? WHERE id = ? AND status = 'running'",
            (status, to_iso(now()), _dumps(summary), run_id),
        )
        return cursor.rowcount == 1


def update_run_summary(conn: sqlite3.Connection, run_id: str, summary: dict[str, Any]) -> None:
    """Progress while the run works; ignored once it has ended, so it never replaces the final summary."""
    with immediate(conn, f"recording the progress of run {run_id}"):
        conn.execute(
            "UPDATE runs SET summary = ? WHERE id = ? AND status = 'running'", (_dumps(summary), run_id)
        )


def start_step(
    conn: sqlite3.Connection,
    *,
    run_id: str,
    asset: str,
    attempt: int,
    reason: str,
    code_hash: str | None,
    log_path: str | None,
) -> None:
    """Record an attempt as running before its code starts (attempts count from 1)."""
    assert attempt >= 1, "attempt 0 is reserved for skipped steps"
    with immediate(conn, f"recording the start of {asset} (attempt {attempt})"):
        conn.execute(
            "INSERT INTO steps (run_id, asset, attempt, status, reason, started_at, code_hash, log_path)"
            " VALUES (?, ?, ?, 'running', ?, ?, ?, ?)",
            (run_id, asset, attempt, reason, to_iso(now()), code_hash, log_path),
        )


def record_skipped_step(
    conn: sqlite3.Connection, *, run_id: str, asset: str, reason: str, error: Problem | None
) -> None:
    """A step that never ran its code (its input failed, or it is held): attempt 0, status skipped."""
    stamp = to_iso(now())
    with immediate(conn, f"recording that {asset} was skipped"):
        conn.execute(
            "INSERT INTO steps (run_id, asset, attempt, status, reason, started_at, finished_at, error)"
            " VALUES (?, ?, 0, 'skipped', ?, ?, ?, ?)",
            (run_id, asset, reason, stamp, stamp, _error_json(error)),
        )


def finish_step(
    conn: sqlite3.Connection,
    *,
    run_id: str,
    asset: str,
    attempt: int,
    status: str,
    rows_in: int = 0,
    added: int = 0,
    updated: int = 0,
    unchanged: int = 0,
    deleted: int = 0,
    error: Problem | None = None,
) -> bool:
    """End an attempt that is still running; returns whether it changed anything."""
    assert status in STEP_STATUSES and status not in ("running", "skipped"), f"not a final status: {status}"
    with immediate(conn, f"recording the end of {asset} (attempt {attempt})"):
        cursor = conn.execute(
            "UPDATE steps SET status = ?, finished_at = ?, rows_in = ?, added = ?, updated = ?,"
            " unchanged = ?, deleted = ?, error = ?"
            " WHERE run_id = ? AND asset = ? AND attempt = ? AND status = 'running'",
            (
                status,
                to_iso(now()),
                rows_in,
                added,
                updated,
                unchanged,
                deleted,
                _error_json(error),
                run_id,
                asset,
                attempt,
            ),
        )
        return cursor.rowcount == 1


@translate_sqlite_errors("reading a run")
def get_run(conn: sqlite3.Connection, run_id_or_prefix: str) -> dict[str, Any] | None:
    """The run with this id, or the one run whose id starts with it; USAGE when a prefix is ambiguous."""
    row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id_or_prefix,)).fetchone()
    if row is not None:
        return _run_dict(row)
    # A range on the primary key, not LIKE ('_' is a wildcard there) nor substr (no index): ids that start
    # with the prefix sort between it and it followed by the highest character.
    rows = conn.execute(
        "SELECT * FROM runs WHERE id >= ? AND id < ? ORDER BY started_at DESC, rowid DESC LIMIT 6",
        (run_id_or_prefix, run_id_or_prefix + "\U0010ffff"),
    ).fetchall()
    if not rows:
        return None
    if len(rows) > 1:
        shown = ", ".join(r["id"] for r in rows[:5]) + (", …" if len(rows) > 5 else "")
        raise CroftError(
            "USAGE",
            f"run id {run_id_or_prefix!r} matches more than one run ({shown})",
            "Give more characters of the run id; `croft logs --runs` lists them.",
        )
    return _run_dict(rows[0])


@translate_sqlite_errors("listing runs")
def list_runs(
    conn: sqlite3.Connection,
    *,
    asset: str | None = None,
    failed: bool = False,
    since: datetime | str | None = None,
    limit: int = 20,
) -> list[dict[str, Any]]:
    """Runs, newest first; ``asset`` keeps runs with a step of it, ``failed`` the failed or crashed ones."""
    where, args = _filters(failed, since)
    if asset is not None:
        where.append("EXISTS (SELECT 1 FROM steps WHERE steps.run_id = runs.id AND steps.asset = ?)")
        args.append(asset)
    rows = _select(conn, "runs", where, args, "started_at DESC, rowid DESC", limit)
    return [_run_dict(r) for r in rows]


@translate_sqlite_errors("listing steps")
def list_steps(
    conn: sqlite3.Connection,
    *,
    asset: str | None = None,
    failed: bool = False,
    since: datetime | str | None = None,
    run_id: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Step rows (one per attempt), newest first."""
    where, args = _filters(failed, since)
    for column, value in (("asset", asset), ("run_id", run_id)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    rows = _select(conn, "steps", where, args, "started_at DESC, attempt DESC, rowid DESC", limit)
    return [_step_dict(r) for r in rows]


def _filters(failed: bool, since: datetime | str | None) -> tuple[list[str], list[Any]]:
    """The filters runs and steps share: failed or crashed only, and started at or after ``since``."""
    where: list[str] = []
    args: list[Any] = []
    if failed:
        where.append(f"status IN ({', '.join('?' for _ in FAILED_STATUSES)})")
        args.extend(FAILED_STATUSES)
    if since is not None:
        where.append("started_at >= ?")
        args.append(_since_iso(since))
    return where, args


def _select(
    conn: sqlite3.Connection, table: str, where: list[str], args: list[Any], order: str, limit: int
) -> list[sqlite3.Row]:
    """Newest first, LIMIT rows. A status list becomes one indexed, already-ordered read per status
    (merged here), so ``--failed`` costs the same with 3k runs as with 180k."""
    status_at = next((i for i, w in enumerate(where) if w.startswith("status IN (")), None)
    if status_at is None:
        sql = f"SELECT * FROM {table}" + (" WHERE " + " AND ".join(where) if where else "")
        return list(conn.execute(f"{sql} ORDER BY {order} LIMIT ?", [*args, limit]))
    statuses = FAILED_STATUSES
    rest = where[:status_at] + where[status_at + 1 :]
    rest_args = args[:status_at] + args[status_at + len(statuses) :]
    parts = []
    params: list[Any] = []
    for status in statuses:
        condition = " AND ".join(["status = ?", *rest])
        parts.append(
            f"SELECT * FROM (SELECT *, rowid AS _rid FROM {table} WHERE {condition} ORDER BY {order} LIMIT ?)"
        )
        params += [status, *rest_args, limit]
    merged = " UNION ALL ".join(parts)
    outer = order.replace("rowid", "_rid")
    rows = conn.execute(f"SELECT * FROM ({merged}) ORDER BY {outer} LIMIT ?", [*params, limit]).fetchall()
    return rows


@translate_sqlite_errors("reading the latest step")
def latest_step(conn: sqlite3.Connection, asset: str) -> dict[str, Any] | None:
    """The asset's most recent step row of any status (skipped ones included)."""
    row = conn.execute(
        "SELECT * FROM steps WHERE asset = ? ORDER BY started_at DESC, attempt DESC, rowid DESC LIMIT 1",
        (asset,),
    ).fetchone()
    return None if row is None else _step_dict(row)


@translate_sqlite_errors("reading who started a run")
def trigger_of(conn: sqlite3.Connection, run_id: str) -> str | None:
    """The run's ``trigger`` (manual, agent or schedule), None for a run not in the history."""
    row = conn.execute("SELECT trigger FROM runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else str(row[0])


@translate_sqlite_errors("reading the asset's failures in a row")
def failing_streak(conn: sqlite3.Connection, asset: str, limit: int = 200) -> tuple[int, str | None]:
    """How many of the asset's latest runs failed in a row (a run counts by its last attempt; skipped
    and interrupted steps are left out), and when the first of them started. Reads at most ``limit``
    steps, so a streak longer than that reads as that long. The rows are read one at a time from the
    (asset, started_at, attempt) index and the read stops at the streak's end: ``croft status`` reads as
    much at 100,000 runs as at 100."""
    rows = conn.execute(
        "SELECT run_id, status, started_at FROM steps WHERE asset = ? AND status NOT IN ('skipped',"
        " 'interrupted', 'running') ORDER BY started_at DESC, attempt DESC, rowid DESC LIMIT ?",
        (asset, limit),
    )
    seen: set[str] = set()
    count, since = 0, None
    try:
        for run_id, status, started_at in rows:
            if run_id in seen:
                since = started_at  # an earlier attempt of a run already counted
                continue
            seen.add(run_id)
            if status not in FAILED_STATUSES:
                break
            count, since = count + 1, started_at
    finally:
        rows.close()
    return count, since if count else None


@translate_sqlite_errors("reading the last successful step")
def last_ok_step(conn: sqlite3.Connection, asset: str) -> dict[str, Any] | None:
    """The asset's most recent step that ran and ended well (``ok`` or ``unchanged``)."""
    row = conn.execute(
        "SELECT * FROM steps WHERE asset = ? AND status IN (?, ?)"
        " ORDER BY started_at DESC, attempt DESC, rowid DESC LIMIT 1",
        (asset, *OK_STEP_STATUSES),
    ).fetchone()
    return None if row is None else _step_dict(row)


@translate_sqlite_errors("listing running runs")
def running_runs(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Runs recorded as running, oldest first (reconcile checks each one's process)."""
    rows = conn.execute("SELECT * FROM runs WHERE status = 'running' ORDER BY started_at, rowid").fetchall()
    return [_run_dict(r) for r in rows]


def end_running(
    conn: sqlite3.Connection,
    run_id: str,
    *,
    status: str,
    error: Problem | dict[str, Any] | None,
    summary: dict[str, Any] | None = None,
    at: datetime | None = None,
    free_leases: bool = True,
) -> list[str] | None:
    """End a run from outside it, in one transaction: the run and every attempt still running get
    ``status`` (attempts with ``error``), and its leases are freed. Returns the assets of the attempts it
    ended; None, changing nothing, when the run had already ended (its own finish or another verdict won).

    The one way a run is ended by anyone but itself: reconcile (crashed), a second Ctrl-C (interrupted),
    the tick's maximum-runtime watchdog (failed with TIMEOUT).
    """
    assert status in RUN_STATUSES and status != "running", f"not a final run status: {status}"
    stamp = to_iso(at or now())
    with immediate(conn, f"recording that run {run_id} ended {status}"):
        columns = "status = ?, finished_at = ?" + (", summary = ?" if summary is not None else "")
        values: list[Any] = [status, stamp, *([_dumps(summary)] if summary is not None else [])]
        ended = conn.execute(
            f"UPDATE runs SET {columns} WHERE id = ? AND status = 'running'", (*values, run_id)
        ).rowcount
        if not ended:
            return None
        assets = [
            str(r[0])
            for r in conn.execute(
                "SELECT asset FROM steps WHERE run_id = ? AND status = 'running'", (run_id,)
            )
        ]
        conn.execute(
            "UPDATE steps SET status = ?, finished_at = ?, error = ? WHERE run_id = ? AND status = 'running'",
            (status, stamp, _error_json(error), run_id),
        )
        if free_leases:
            conn.execute("DELETE FROM leases WHERE run_id = ?", (run_id,))
    return assets


def mark_crashed(conn: sqlite3.Connection, run_id: str, problem: Problem) -> None:
    """Reconcile's verdict on a run whose process is gone: it and its running steps become crashed
    (reconcile frees the leases of dead holders itself)."""
    end_running(conn, run_id, status="crashed", error=problem, free_leases=False)


def interrupt_run(conn: sqlite3.Connection, run_id: str, error: Problem, summary: dict[str, Any]) -> None:
    """Record at once that a run was stopped: its running attempts and itself ``interrupted``, its leases
    freed. One transaction, for the second Ctrl-C, which does not wait for the run's own clean-up."""
    end_running(conn, run_id, status="interrupted", error=error, summary=summary)
