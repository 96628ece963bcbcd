"""Settling the runs earlier ticks started: still starting, done, or never started what they were given.

Before spawning, the tick notes each run (settings ``schedule.spawned``) in the same transaction that
records its fires, so a later tick can tell what happened: a run still starting holds its assets; a run
that ended without attempting an asset gives that fire back (it stays due); a child that died, refused
or crashed before starting an asset is a failed start, and the asset waits 15 minutes before one more
try (settings ``schedule.failedStarts``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.clock import parse_instant, to_iso
from croft.core.identity import ProcessIdentity, is_alive
from croft.history.db import immediate, translate_sqlite_errors
from croft.history.state import get_setting, put_setting
from croft.scheduler.due import RETRY_BACKOFF, FailedStart

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FAILED_KEY",
    "SPAWNED_KEY",
    "SPAWN_GRACE",
    "Settled",
    "apply_settled",
    "not_started_path",
    "settle",
    "tidy_reported",
]

SPAWNED_KEY = "schedule.spawned"
FAILED_KEY = "schedule.failedStarts"
SPAWN_GRACE = timedelta(seconds=10)
NOT_STARTED = "_not_started.json"
PROCESS_LOG = "process.log"
# A run that ended with one of these wrote its own envelope into its row (``runs.summary``): the copy
# its process printed is not needed once the tick has settled it.
REPORTED = ("succeeded", "failed")


def not_started_path(state_dir: Path, run_id: str) -> Path:
    """Where a scheduled child that refuses to start leaves its Problem for the next tick."""
    return Path(state_dir) / "logs" / run_id / NOT_STARTED


@dataclass(slots=True)
class Settled:
    starting: list[tuple[str, list[str]]] = field(default_factory=list)
    failed_starts: list[FailedStart] = field(default_factory=list)  # every one still waiting
    new_failures: list[FailedStart] = field(default_factory=list)
    rollbacks: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # asset -> (fire, before)
    still: list[dict[str, Any]] = field(default_factory=list)  # notes of runs still in flight
    ended: list[ProcessIdentity] = field(default_factory=list)  # the noted runs' processes, now over
    noted: int = 0  # how many notes and failed starts were stored (to skip a write that changes nothing)
    failed_read: int = 0
    reported: list[str] = field(default_factory=list)  # runs that ended and recorded their own report

    def rollback_view(self) -> dict[str, str | None]:
        return {asset: before for asset, (_, before) in self.rollbacks.items()}


def _plural(assets: list[str], one: str, many: str) -> str:
    return one if len(assets) == 1 else many


@translate_sqlite_errors("settling the runs earlier ticks started")
def settle(conn: sqlite3.Connection, state_dir: Path, now: datetime) -> Settled:
    """Read-only: what became of each noted run (the tick then writes it with ``apply_settled``)."""
    out = Settled()
    stored_failed = get_setting(conn, FAILED_KEY) or []
    stored_notes = get_setting(conn, SPAWNED_KEY) or []
    out.failed_read, out.noted = len(stored_failed), len(stored_notes)
    for value in stored_failed:
        try:
            failed = _failed_from(value)
        except (KeyError, TypeError, ValueError):
            continue
        if parse_instant(failed.at) + RETRY_BACKOFF > now:
            out.failed_starts.append(failed)
    for note in stored_notes:
        run_id, assets = str(note.get("runId")), [str(a) for a in note.get("assets") or ()]
        row = conn.execute(
            "SELECT status, pid, proc_start, boot_id FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        why: str | None = None
        if row is not None:
            who = ProcessIdentity(row["pid"], row["proc_start"], row["boot_id"])
            if row["status"] == "running" and is_alive(who):
                out.still.append(note)
                out.starting.append((run_id, assets))
                continue
            if is_alive(who):  # its row ended and it is finishing: handing its slot on (tick.afterrun),
                out.still.append(note)  # then ending its own group; a later tick settles it, and ends
                continue  # what it left running, once it is gone (a group signalled now would end it too)
            out.ended.append(who)
            attempted = {
                r["asset"]
                for r in conn.execute("SELECT asset FROM steps WHERE run_id = ? AND attempt >= 1", (run_id,))
            }
            unstarted = [a for a in assets if a not in attempted]
            if unstarted and row["status"] in ("crashed", "interrupted", "running"):
                verb = "was interrupted" if row["status"] == "interrupted" else "crashed"
                why = f"the run {verb} before it started {_plural(unstarted, 'it', 'them')}"
            elif row["status"] in REPORTED:
                out.reported.append(run_id)
        else:
            refusal = not_started_path(state_dir, run_id)
            if refusal.is_file():
                unstarted = assets
                try:
                    found = json.loads(refusal.read_text(encoding="utf-8"))
                    why = f"it refused to start: {found.get('code')}: {found.get('message')}"
                except (OSError, ValueError, AttributeError):
                    why = "it refused to start"
            elif _child_may_live(note, now):
                out.still.append(note)
                out.starting.append((run_id, assets))
                continue
            else:
                if note.get("pid"):
                    out.ended.append(
                        ProcessIdentity(int(note["pid"]), note.get("procStart"), note.get("bootId"))
                    )
                unstarted = assets
                why = "its process ended before it recorded the run"
        fires = note.get("fires") or {}
        for asset in unstarted:
            if asset in fires:
                out.rollbacks[asset] = (fires[asset]["fire"], fires[asset].get("before"))
        if why and unstarted:
            failed = FailedStart(run_id, tuple(unstarted), str(note.get("at")), why)
            out.new_failures.append(failed)
            if parse_instant(failed.at) + RETRY_BACKOFF > now:
                out.failed_starts.append(failed)
    return out


def tidy_reported(state_dir: Path, settled: Settled) -> None:
    """Remove the log folder of each settled run that reported itself, when it holds only the output
    the run printed (its envelope, already in its row): 1,100 scheduled runs a day would otherwise
    keep a folder and a file each for the whole history. A crashed, interrupted or refused run keeps
    its folder: what it printed is the evidence the tick's warning points to."""
    for run_id in settled.reported:
        folder = Path(state_dir) / "logs" / run_id
        try:
            names = os.listdir(folder)
            if names == [PROCESS_LOG]:
                os.unlink(folder / PROCESS_LOG)
                os.rmdir(folder)
        except OSError:
            continue  # not there, or not ours to tidy: pruning removes it with the run


def _child_may_live(note: dict[str, Any], now: datetime) -> bool:
    """The noted child is alive, or the tick died before noting it and the spawn is only seconds old."""
    child = note.get("pid")
    if child:
        return is_alive(ProcessIdentity(int(child), note.get("procStart"), note.get("bootId")))
    return now - parse_instant(str(note.get("at"))) < SPAWN_GRACE


def apply_settled(conn: sqlite3.Connection, settled: Settled) -> None:
    """Write what ``settle`` found: fires go back (only where no later fire moved them), notes are pruned.

    Nothing is written when nothing changed (the idle tick's case)."""
    if (
        not settled.rollbacks
        and settled.noted == len(settled.still)
        and settled.failed_read == len(settled.failed_starts)
    ):
        return
    with immediate(conn, "settling the runs earlier ticks started"):
        for asset, (fire, before) in settled.rollbacks.items():
            conn.execute(
                "UPDATE schedule_state SET last_fire_at = ? WHERE asset = ? AND last_fire_at = ?",
                (before, asset, fire),
            )
        put_setting(conn, SPAWNED_KEY, settled.still)
        put_setting(conn, FAILED_KEY, [_failed_json(f) for f in settled.failed_starts])


def note_spawn(
    conn: sqlite3.Connection,
    run_id: str,
    assets: list[str],
    at: datetime,
    fires: dict[str, str],
    attempted: list[str],
    deadline: str | None = None,
) -> None:
    """Record a group's fires, its attempt and the spawned note in ONE transaction, before the spawn.

    ``deadline``: when the run passes its ceiling (``scheduler.tick.ceiling``)."""
    with immediate(conn, f"recording the scheduled run {run_id}"):
        stamp = to_iso(at)
        befores: dict[str, dict[str, Any]] = {}
        for asset, fire in fires.items():
            row = conn.execute("SELECT last_fire_at FROM schedule_state WHERE asset = ?", (asset,)).fetchone()
            befores[asset] = {"fire": fire, "before": row["last_fire_at"] if row else None}
        for asset in attempted:
            conn.execute(
                "INSERT INTO schedule_state (asset, last_attempt_at) VALUES (?, ?)"
                " ON CONFLICT(asset) DO UPDATE SET last_attempt_at = excluded.last_attempt_at",
                (asset, stamp),
            )
        for asset, fire in fires.items():
            conn.execute(
                "INSERT INTO schedule_state (asset, last_fire_at) VALUES (?, ?)"
                " ON CONFLICT(asset) DO UPDATE SET last_fire_at = excluded.last_fire_at",
                (asset, fire),
            )
        notes = list(get_setting(conn, SPAWNED_KEY) or [])
        note: dict[str, Any] = {"runId": run_id, "assets": assets, "at": stamp, "fires": befores}
        if deadline:
            note["deadline"] = deadline
        notes.append(note)
        put_setting(conn, SPAWNED_KEY, notes)


def note_child(conn: sqlite3.Connection, run_id: str, who: ProcessIdentity) -> None:
    """Add the spawned child's identity to its note, so the next tick can tell it alive or dead."""
    with immediate(conn, f"recording the process of run {run_id}"):
        notes = list(get_setting(conn, SPAWNED_KEY) or [])
        for note in notes:
            if note.get("runId") == run_id:
                note.update(pid=who.pid, procStart=who.start, bootId=who.boot)
        put_setting(conn, SPAWNED_KEY, notes)


def forget_spawn(conn: sqlite3.Connection, run_id: str, failure: FailedStart | None) -> None:
    """A spawn that failed: give its fires back and record the failed start (None: none, the tick itself
    fails with the cause), in one transaction."""
    with immediate(conn, f"forgetting the scheduled run {run_id}"):
        notes = list(get_setting(conn, SPAWNED_KEY) or [])
        mine = [n for n in notes if n.get("runId") == run_id]
        for note in mine:
            for asset, rec in (note.get("fires") or {}).items():
                conn.execute(
                    "UPDATE schedule_state SET last_fire_at = ? WHERE asset = ? AND last_fire_at = ?",
                    (rec.get("before"), asset, rec.get("fire")),
                )
        put_setting(conn, SPAWNED_KEY, [n for n in notes if n.get("runId") != run_id])
        if failure is not None:
            failed = list(get_setting(conn, FAILED_KEY) or [])
            failed.append(_failed_json(failure))
            put_setting(conn, FAILED_KEY, failed)


def _failed_json(failed: FailedStart) -> dict[str, Any]:
    """A failed start as settings ``schedule.failedStarts`` keeps it."""
    return {"runId": failed.run_id, "assets": list(failed.assets), "at": failed.at, "reason": failed.reason}


def _failed_from(value: Any) -> FailedStart:
    """The stored form back; KeyError, TypeError or ValueError when it is not one."""
    return FailedStart(
        str(value["runId"]), tuple(value.get("assets") or ()), str(value["at"]), str(value["reason"])
    )
