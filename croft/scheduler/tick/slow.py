"""Slow runs: a scheduled step still running past its asset's ``slow_after`` is told once, as a notice.

The project tick notices it, not a timer in the run. The tick is the observer that keeps looking when
the run is wedged, stopped (SIGSTOP) or holding the interpreter in a C call; it reads the same clock
(``CROFT_NOW``) as the ceiling that ends runs past ``max_runtime``, right after that ceiling, so a run
it has just ended is never also called slow; and a tick is never idle while a run is recorded running,
so it looks every minute for as long as the run lasts (which is why ``slow_after`` is a minute at
least: ``bounds.BOUNDS``). Costs nothing unless an asset has a ``slow_after`` and a run is running.

Once per run and asset, across ticks: the pairs told are claimed in settings ``notify.slowTold`` in one
write transaction before anything is sent (as ``tick.tell`` claims crashed runs), so a send that fails
is a line in ``notify.log``, never a notice repeated every minute. Each look drops the pairs of runs no
longer recorded running, so the setting stays small. A step's time counts from its first attempt in the run:
retries are part of what makes a run slow.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from croft.core.clock import parse_instant
from croft.history.db import immediate
from croft.history.state import get_setting, put_setting
from croft.notify.message import slow_message, slow_payload
from croft.notify.send import note_miss, notify_event
from croft.project.config import Project

__all__ = ["SLOW_KEY", "Slow", "claim_slow", "slow_steps", "tell_slow"]

SLOW_KEY = "notify.slowTold"

_RUNNING = """
SELECT s.run_id, s.asset, MIN(s.started_at) AS started_at
FROM steps s JOIN runs r ON r.id = s.run_id
WHERE r.status = 'running' AND r.trigger = 'schedule'
GROUP BY s.run_id, s.asset
HAVING SUM(s.status = 'running') > 0
ORDER BY s.run_id, started_at
"""


@dataclass(frozen=True)
class Slow:
    """One asset of one scheduled run running past its ``slow_after``."""

    run_id: str
    asset: str
    started_at: str
    running_s: float
    slow_after_s: float

    @property
    def key(self) -> str:
        return f"{self.run_id} {self.asset}"


def slow_steps(
    running: Iterable[tuple[str, str, str]], bounds: Mapping[str, float], now: datetime
) -> list[Slow]:
    """The (run, asset, first start) still running whose asset's bound has passed at ``now``. Pure."""
    found = []
    for run_id, asset, started_at in running:
        bound = bounds.get(asset)
        if not bound:
            continue
        try:
            took = (now - parse_instant(started_at)).total_seconds()
        except (TypeError, ValueError):  # an unreadable start is no evidence of slowness
            continue
        if took >= bound:
            found.append(Slow(run_id, asset, started_at, took, bound))
    return found


def claim_slow(conn: sqlite3.Connection, infos: Mapping[str, Any], now: datetime) -> list[Slow]:
    """The slow steps not told yet, marked told as they are returned (see the module docstring)."""
    bounds = {name: info.slow_after_s for name, info in infos.items() if getattr(info, "slow_after_s", None)}
    if not bounds:
        return []  # the usual project: no query at all
    running = [(str(r[0]), str(r[1]), str(r[2])) for r in conn.execute(_RUNNING)]
    found = slow_steps(running, bounds, now)
    stored = get_setting(conn, SLOW_KEY) or []
    if not found and not stored:
        return []
    with immediate(conn, "noting which slow runs were told"):
        stored = get_setting(conn, SLOW_KEY) or []
        told = {str(x) for x in stored} if isinstance(stored, list) else set()
        live = {str(r[0]) for r in conn.execute("SELECT id FROM runs WHERE status = 'running'")}
        kept = {key for key in told if key.split(" ", 1)[0] in live}
        new = [s for s in found if s.key not in told]
        keep = sorted(kept | {s.key for s in new})
        if keep != sorted(told):
            put_setting(conn, SLOW_KEY, keep)
    return new


def tell_slow(project: Project, slow: Iterable[Slow]) -> None:
    """One notice per run naming its slow assets (desktop, webhook, every channel); never raises."""
    by_run: dict[str, list[Slow]] = {}
    for item in slow:
        by_run.setdefault(item.run_id, []).append(item)
    for run_id, items in by_run.items():
        try:
            steps = [(s.asset, s.running_s, s.slow_after_s) for s in items]
            title, body = slow_message(project.root.name, run_id, steps)
            payload = slow_payload(project.root.name, title, body, run_id, steps)
        except Exception as exc:  # a notice that cannot be built is a line in notify.log, not a failed tick
            note_miss(project, run_id, f"notify: slow run: {type(exc).__name__}: {exc}")
            continue
        notify_event(project, "slow", title, body, payload, run_id=run_id)
