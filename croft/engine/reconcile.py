"""Settle what dead runs left behind: a run whose process is gone becomes ``crashed`` and frees its leases.

Every command that writes, and every tick, calls this first. Liveness is pid + start time + boot id, so
a reused pid never keeps a dead run "running". Because cursors and rows commit together, a crash only
means extraction is redone, never skipped; the catalog mirror is refreshed from the warehouse for the
run's assets in case the crash fell between the warehouse commit and the mirror write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from croft.core.identity import ProcessIdentity, is_alive
from croft.core.problems import problem
from croft.history import leases, runs

__all__ = ["reconcile"]


def reconcile(conn: sqlite3.Connection, refresh: Callable[[list[str]], None] | None = None) -> list[str]:
    """Mark dead running runs crashed; returns their ids."""
    crashed = []
    for run in runs.running_runs(conn):
        who = ProcessIdentity(run["pid"], run["proc_start"], run["boot_id"])
        if is_alive(who):
            continue
        assets = sorted({s["asset"] for s in runs.list_steps(conn, run_id=run["id"], limit=1000)})
        runs.mark_crashed(
            conn,
            run["id"],
            problem(
                "RUN_CRASHED",
                f"run {run['id']} (pid {run['pid']}) ended without finishing its work",
                "Nothing it was writing was committed; run it again with `croft run`"
                + (f" {' '.join(assets)}" if assets else "")
                + ".",
                retryable=True,
                details={"runId": run["id"], "pid": run["pid"]},
            ),
        )
        leases.release(conn, run["id"])
        if refresh and assets:
            refresh(assets)
        crashed.append(run["id"])
    leases.release_dead(conn)
    return crashed
