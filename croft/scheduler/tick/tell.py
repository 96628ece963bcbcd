"""What the tick tells: the runs it started that never started their assets, and crashed scheduled runs.

Each is told once. A failed start is found once by construction: ``settle`` reports a spawned note once
and the same tick prunes it (and a spawn that fails is told where it fails). A crash is not: any
command's reconcile can mark a scheduled run crashed first (a ``croft run`` by hand, ``croft status``,
``croft logs``), and none of them notifies. So every full tick looks for crashed scheduled runs that
ended in the last day, and the ones not yet in settings ``notify.toldRuns`` are claimed there in one
write transaction *before* anything is sent: at most once, since a send that fails is a line in
``notify.log`` rather than a message repeated every minute. The setting holds only the ids still inside
that day, so it stays small; a tick that finds nothing new writes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from croft.core.clock import to_iso
from croft.history.db import immediate
from croft.history.state import get_setting, put_setting
from croft.notify.message import Failed
from croft.notify.send import note_miss, notify_crashed_runs, notify_failed_start

if TYPE_CHECKING:
    from croft.core.problems import Problem
    from croft.project.config import Project
    from croft.scheduler.due import FailedStart

__all__ = ["LOOK_BACK", "TOLD_KEY", "claim_crashed", "tell_after_tick"]

TOLD_KEY = "notify.toldRuns"
LOOK_BACK = timedelta(days=1)

_CRASHED = (
    "SELECT id FROM runs WHERE status = 'crashed' AND trigger = 'schedule' AND finished_at >= ? ORDER BY id"
)


def claim_crashed(conn: sqlite3.Connection, now: datetime) -> list[str]:
    """The crashed scheduled runs of the last day nobody has told of yet, marked told as they are returned."""
    since = to_iso(now - LOOK_BACK)
    if conn.execute(_CRASHED + " LIMIT 1", (since,)).fetchone() is None:
        return []  # the usual tick: one indexed read, no write
    with immediate(conn, "noting which crashed runs were notified"):
        crashed = [str(row[0]) for row in conn.execute(_CRASHED, (since,))]
        stored = get_setting(conn, TOLD_KEY) or []
        told = {str(x) for x in stored} if isinstance(stored, list) else set()
        if set(crashed) != told:
            put_setting(conn, TOLD_KEY, crashed)
    return [run_id for run_id in crashed if run_id not in told]


def tell_after_tick(
    project: Project,
    conn: sqlite3.Connection,
    now: datetime,
    failed_starts: Sequence[tuple[FailedStart, Problem]],
) -> None:
    """Notify this tick's failed starts (each with the problem the tick reported) and the crashed
    scheduled runs not told yet, one message per run; never raises.

    A failed start whose run row says crashed (it recorded itself, then died before starting some of
    its assets) is told with the crash, naming what crashed and what never started."""

    try:
        crashed = claim_crashed(conn, now)
    except Exception as exc:  # no claim, no message: a repeat every minute would be worse than a miss
        note_miss(project, None, f"notify: crashed runs not checked: {type(exc).__name__}: {exc}")
        crashed = []
    unstarted: dict[str, list[Failed]] = {}
    for failure, why in failed_starts:
        if failure.run_id in crashed:
            unstarted[failure.run_id] = [Failed(asset, why.to_dict()) for asset in failure.assets]
        else:
            notify_failed_start(project, failure.run_id, failure.assets, why, conn=conn)
    if crashed:
        notify_crashed_runs(project, conn, crashed, unstarted)
