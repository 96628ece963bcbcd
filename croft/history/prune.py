"""Bounded history: runs, steps and step logs older than the retention window go, as part of a run.

Kept whatever their age: runs still running, the latest run of each asset and the run of its last good
step (status and staleness read them), runs holding a lease, and every run the scheduler still refers to
(any run id found in ``schedule_state`` or in the settings ``schedule.spawned`` / ``schedule.failedStarts``).
A pass deletes at most ``BATCH`` runs, so one run never pays for years of backlog at once.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from croft.core.clock import now as clock_now
from croft.core.clock import to_iso
from croft.core.problems import CroftError
from croft.history.db import immediate, translate_sqlite_errors

__all__ = ["BATCH", "DEFAULT_KEEP_DAYS", "Pruned", "kept_runs", "prune_after_run", "prune_history"]

DEFAULT_KEEP_DAYS = 90
BATCH = 2000
SCHEDULER_SETTINGS = ("schedule.spawned", "schedule.failedStarts")
_RUN_ID_PREFIX = "r_"
# The assets with steps, one index probe each (a skip-scan of the asset index), not one read per step:
# pruning runs at the end of every run, so it must not grow with the history it keeps.
_ASSETS = (
    "WITH RECURSIVE a(x) AS (SELECT MIN(asset) FROM steps"
    " UNION ALL SELECT (SELECT MIN(asset) FROM steps WHERE asset > a.x) FROM a WHERE a.x IS NOT NULL)"
    " SELECT x FROM a WHERE x IS NOT NULL"
)


@dataclass(frozen=True)
class Pruned:
    runs: int
    steps: int
    logs: int


def _run_ids_in(value: Any) -> Iterable[str]:
    """Every string in a JSON value that looks like a run id (keys included)."""
    if isinstance(value, str):
        if value.startswith(_RUN_ID_PREFIX):
            yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _run_ids_in(key)
            yield from _run_ids_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _run_ids_in(item)


def kept_runs(conn: sqlite3.Connection) -> set[str]:
    """The runs pruning never removes, whatever their age (see the module doc)."""
    kept: set[str] = set()
    assets = [row[0] for row in conn.execute(_ASSETS)]
    order = "ORDER BY started_at DESC, attempt DESC, rowid DESC LIMIT 1"
    for asset in assets:
        for extra in ("", " AND status IN ('ok', 'unchanged')"):
            row = conn.execute(
                f"SELECT run_id FROM steps WHERE asset = ?{extra} {order}", (asset,)
            ).fetchone()
            if row:
                kept.add(row[0])
    kept.update(row[0] for row in conn.execute("SELECT run_id FROM leases"))
    kept.update(row[0] for row in conn.execute("SELECT id FROM runs WHERE status = 'running'"))
    for row in conn.execute("SELECT * FROM schedule_state"):
        kept.update(_run_ids_in(list(row)))
    marks = ", ".join("?" * len(SCHEDULER_SETTINGS))
    for (text,) in conn.execute(f"SELECT value FROM settings WHERE key IN ({marks})", SCHEDULER_SETTINGS):
        try:
            kept.update(_run_ids_in(json.loads(text)))
        except ValueError:
            continue
    return kept


def prune_history(
    conn: sqlite3.Connection, *, now: datetime, keep_days: int, logs_dir: Path | None = None
) -> Pruned:
    """Delete what is older than ``keep_days`` and not kept; cheap (one indexed probe) when nothing is."""
    cutoff = to_iso(now - timedelta(days=keep_days))
    with translate_sqlite_errors("pruning the run history"):
        probe = "SELECT id FROM runs WHERE started_at < ? ORDER BY started_at LIMIT ?"
        old = [row[0] for row in conn.execute(probe, (cutoff, BATCH + 1000))]
        if not old:
            return Pruned(0, 0, 0)
        kept = kept_runs(conn)
        doomed = [run_id for run_id in old if run_id not in kept][:BATCH]
        if not doomed:
            return Pruned(0, 0, 0)
        marks = ", ".join("?" * len(doomed))
        logs = [
            row[0] for row in conn.execute(f"SELECT log_path FROM steps WHERE run_id IN ({marks})", doomed)
        ]
        with immediate(conn, "pruning the run history"):
            steps = conn.execute(f"DELETE FROM steps WHERE run_id IN ({marks})", doomed).rowcount
            conn.execute(f"DELETE FROM step_logs WHERE run_id IN ({marks})", doomed)
            runs = conn.execute(f"DELETE FROM runs WHERE id IN ({marks})", doomed).rowcount
    removed = _remove_logs(logs, doomed, logs_dir)
    return Pruned(runs, steps, removed)


def _remove_logs(paths: list[str | None], run_ids: list[str], logs_dir: Path | None) -> int:
    """Step log files of pruned runs, and a pruned run's own folder under the logs folder if it has one.
    Only files inside ``logs_dir`` are touched (a log_path is data, not an instruction)."""
    if logs_dir is None:
        return 0
    root = logs_dir.resolve()
    removed = 0
    for text in {p for p in paths if p}:
        path = Path(text)
        try:
            if path.resolve().parent == root or root in path.resolve().parents:
                path.unlink()
                removed += 1
        except OSError:
            continue
    for run_id in run_ids:
        folder = root / run_id
        if folder.is_dir() and folder.parent == root:
            shutil.rmtree(folder, ignore_errors=True)
    return removed


def prune_after_run(conn: sqlite3.Connection, config: Any) -> Pruned | None:
    """The pass a run makes at its end; a failure to prune never fails the run (the next one tries again)."""
    keep_days = getattr(config, "history_keep_days", DEFAULT_KEEP_DAYS)
    try:
        return prune_history(conn, now=clock_now(), keep_days=keep_days, logs_dir=config.state_dir / "logs")
    except (CroftError, ArithmeticError, ValueError):  # the run is done: its result stands
        return None
