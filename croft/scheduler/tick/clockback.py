"""The clock moved back: what the tick does when it finds marks stamped ahead of its clock.

An NTP correction, a wrong clock at boot or a tick run with a ``CROFT_NOW`` ahead leaves fires, the
heartbeat or leases stamped hours (or years) after "now". Left alone, a fire ahead would keep its ingest
from being due until the clock caught up (an every-minute ingest starting nothing for five hours, every
screen saying all is well). The due policy already reasons from the clock (``scheduler.due``: a fire far
ahead covers the fires up to now and no further); the tick writes that correction here, so the next fire
by today's clock runs and nothing runs twice, and records CLOCK_MOVED_BACK as the project's incident
(source ``clock``): told once, shown by ``croft status``, ``croft schedule status`` and ``croft doctor``
(``control.troubles``) until the clock has caught up with the latest mark, and cleared then.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from croft.core.clock import to_iso
from croft.core.problems import Problem, problem
from croft.history.db import immediate
from croft.project.config import Project
from croft.scheduler import incidents
from croft.scheduler.heartbeat import AHEAD_LIMIT
from croft.scheduler.tick.failure import note_incident

__all__ = ["SOURCE", "clock_problem", "correct", "marks_ahead", "settle_clock"]

SOURCE = incidents.CLOCK  # whose incident this is: a tick that succeeds keeps it


def marks_ahead(conn: Any, now: datetime, previous_beat: str | None) -> dict[str, str]:
    """What lies more than ``AHEAD_LIMIT`` ahead of ``now``: ``{what: stamp}`` for the last heartbeat and
    each lease (a lease is held by a process, not a time, so one ahead holds nothing: it is only said)."""
    limit = to_iso(now + AHEAD_LIMIT)
    found: dict[str, str] = {}
    if previous_beat and previous_beat > limit:
        found["the last tick"] = previous_beat
    for asset, since in conn.execute("SELECT asset, since FROM leases WHERE since > ?", (limit,)):
        found[f"the lease of {asset}"] = str(since)
    return found


def correct(conn: Any, ahead: dict[str, tuple[str | None, str]]) -> None:
    """Write the due policy's correction of each fire ahead (``DueWork.ahead``), only where the stored fire
    is still the one the decision read (a racing tick's newer fire is kept)."""
    with immediate(conn, "correcting fires recorded ahead of the clock"):
        for asset, (stored, fixed) in ahead.items():
            conn.execute(
                "INSERT INTO schedule_state (asset, last_fire_at) VALUES (?, ?)"
                " ON CONFLICT(asset) DO UPDATE SET last_fire_at = excluded.last_fire_at"
                " WHERE schedule_state.last_fire_at IS ?",
                (asset, fixed, stored),
            )


def clock_problem(root: str, now: datetime, marks: dict[str, str]) -> Problem:
    latest = max(marks.values())
    said = ", ".join(f"{what} at {stamp}" for what, stamp in sorted(marks.items(), key=lambda m: m[1]))
    return problem(
        "CLOCK_MOVED_BACK",
        f"the clock moved back: {root} has {said}, ahead of the clock ({to_iso(now)})",
        "croft goes by the clock as it is now: each ingest runs at its next fire by today's clock, and no"
        " fire runs twice. Fires that fell between the two clocks are not run again: `croft run ASSET`"
        " runs one now. This notice goes once the clock has passed the latest mark; check the machine's"
        " clock (timedatectl) and CROFT_NOW if it keeps coming back.",
        severity="warning",
        details={"cause": "clock_backwards", "root": root, "marks": marks, "until": latest},
    )


def settle_clock(
    project: Project,
    conn: Any,
    now: datetime,
    previous_beat: str | None,
    ahead: dict[str, tuple[str | None, str]],
) -> Problem | None:
    """Correct the fires ahead, and record (told once) or clear the project's CLOCK_MOVED_BACK incident;
    the problem when the clock moved back, for the tick's envelope."""
    marks = marks_ahead(conn, now, previous_beat)
    for asset, (stored, _fixed) in ahead.items():
        if stored:
            marks[f"the last fire of {asset}"] = stored
    if ahead:
        correct(conn, ahead)
    root = str(project.root)
    if not marks:
        found = incidents.read(root)
        if found is not None and found.get("source") == SOURCE and not incidents.clock_shown(found, now):
            incidents.clear(root, SOURCE)  # the clock has caught up (or a day has passed): it is over
        return None
    found_problem = clock_problem(root, now, marks)
    before = incidents.read(root)
    if before is not None and before.get("source") == SOURCE:  # the same incident: keep its latest mark
        until = str((before["problem"].get("details") or {}).get("until") or "")
        if until > found_problem.details["until"]:  # type: ignore[index]
            found_problem = found_problem.with_(details={**(found_problem.details or {}), "until": until})

    note_incident(project.root, found_problem, now, SOURCE, project)
    return found_problem
