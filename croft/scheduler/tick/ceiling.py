"""The wall-clock ceiling of a scheduled run: past it the run is ended as TIMEOUT, so nothing wedges.

The tick notes each run it spawns with its deadline (the tick's clock + the run's ceiling: the largest
``max_runtime`` of the assets it was started for and what follows them; an asset without one takes
croft.json's ``maxRuntime``, else 2 h). Every project tick, before reconcile, ends each noted run that
is still recorded running past its deadline, alive or not, stuck or not:

1. in one transaction the run becomes ``failed``, its running steps ``failed`` with TIMEOUT (retryable,
   so the usual backoff applies) and its leases are freed; a run that then notices it was ended this way
   does not notify again (the runner checks ``finish_run``'s answer);
2. its process group gets SIGTERM (and SIGCONT, so a SIGSTOPped run can act on it), and SIGKILL if any
   of it is still alive 10 s later: the run and whatever its asset code started (``tick.rungroup``);
3. the failure is notified like any scheduled failure.

Because every tick does this, a wedged run never holds a lease past its ceiling plus one minute.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from croft.core.clock import parse_instant, to_iso
from croft.core.duration import words
from croft.core.identity import ProcessIdentity, is_alive
from croft.core.problems import Problem, problem
from croft.history import runs
from croft.history.state import get_setting
from croft.notify.message import Failed
from croft.notify.send import notify_scheduled_failure
from croft.project.config import Project
from croft.scheduler.tick.rungroup import end_group
from croft.scheduler.tick.settle import SPAWNED_KEY

__all__ = ["DEFAULT_MAX_RUNTIME_S", "KILL_AFTER_S", "deadline_for", "enforce_ceilings", "terminate"]

DEFAULT_MAX_RUNTIME_S = 2 * 3600.0
KILL_AFTER_S = 10.0


def run_ceiling_s(assets: Iterable[str], infos: Mapping[str, Any], project_default: float | None) -> float:
    """The largest ceiling among ``assets`` (an asset's own, else the project's, else 2 h)."""
    fallback = project_default if project_default else DEFAULT_MAX_RUNTIME_S
    values = [getattr(infos.get(a), "max_runtime_s", None) or fallback for a in assets]
    return max(values, default=fallback)


def deadline_for(assets: Iterable[str], infos: Mapping[str, Any], project: Project, now: datetime) -> str:
    return to_iso(now + timedelta(seconds=run_ceiling_s(assets, infos, project.config.max_runtime_s)))


def terminate(who: ProcessIdentity, kill_after_s: float = KILL_AFTER_S) -> str:
    """End the run and its whole process group (``rungroup.end_group``): SIGTERM (+ SIGCONT), then
    SIGKILL after ``kill_after_s``, for what the run left running too, even when the run itself is gone.

    Returns what it took for the run: ``gone`` (already dead), ``term`` or ``kill``."""
    was_alive = is_alive(who)
    how = end_group(who, kill_after_s)
    return how if was_alive else "gone"


def _timeout_problem(run_id: str, ceiling: str) -> Problem:
    return problem(
        "TIMEOUT",
        f"the scheduled run {run_id} ran past its maximum runtime ({ceiling}) and was stopped",
        "croft logs shows how far it got; raise max_runtime= on the asset (or maxRuntime in croft.json)"
        " if it needs longer; the scheduler tries again after the usual backoff",
        retryable=True,
        details={"runId": run_id, "maxRuntime": ceiling},
    )


def enforce_ceilings(project: Project, conn: sqlite3.Connection, now: datetime) -> list[Problem]:
    """End every noted scheduled run past its deadline (see the module docstring); warnings for the tick."""

    found: list[Problem] = []
    for note in get_setting(conn, SPAWNED_KEY) or []:
        deadline = note.get("deadline")
        if not deadline or parse_instant(str(deadline)) > now:
            continue
        run_id = str(note.get("runId"))
        row = conn.execute(
            "SELECT status, pid, proc_start, boot_id, started_at FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        if row is None or row["status"] != "running":
            continue
        ceiling = words((parse_instant(str(deadline)) - parse_instant(str(note.get("at")))).total_seconds())
        stop = _timeout_problem(run_id, ceiling)
        summary = {"ok": False, "data": {"runId": run_id, "status": "failed"}, "problems": [stop.to_dict()]}
        assets = runs.end_running(
            conn, run_id, status="failed", error=stop, summary=summary | {"exit": 1}, at=now
        )
        if assets is None:
            continue
        how = terminate(ProcessIdentity(row["pid"], row["proc_start"], row["boot_id"]))
        failed_assets = assets or [str(a) for a in note.get("assets") or ()]
        _notify(project, conn, run_id, failed_assets, stop)
        said = {"gone": "its process was already gone", "term": "it stopped on SIGTERM"}.get(
            how, "it did not stop on SIGTERM and was killed"
        )
        found.append(stop.with_(severity="warning", message=f"{stop.message}; {said}"))
    return found


def _notify(
    project: Project, conn: sqlite3.Connection, run_id: str, assets: list[str], stop: Problem
) -> None:

    failed = [Failed(a, stop.with_(asset=a).to_dict()) for a in assets]
    notify_scheduled_failure(project, run_id, failed, conn=conn)
