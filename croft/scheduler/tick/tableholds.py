"""Incremental ingests the scheduler holds because their table was dropped or emptied outside croft.

A scheduled run finds it at the step's start (``duerules``), before any request: the ingest is held, not
run, and the first run that finds it notes it here (settings ``tables.held``) and tells once. The due
policy reads the notes (``gather``) and holds the ingest at every tick after, so no run is started for it
each minute; a successful step of the asset since the note (the person's ``--full-refresh``) ends it, and
so does the table found back as croft left it (a backup put back).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.clock import now, to_iso
from croft.engine.tablehealth import lost_rows, observe, table_problem
from croft.history import state
from croft.history.db import immediate

if TYPE_CHECKING:
    from typing import Any

    from croft.core.problems import Problem

__all__ = ["HELD_KEY", "live", "note", "still_lost"]

HELD_KEY = "tables.held"


def live(notes: Any, last_ok: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The notes still holding (pure): those with no successful step of their asset since."""
    if not isinstance(notes, dict):
        return {}
    out = {}
    for asset, note_ in notes.items():
        if isinstance(note_, dict) and str(last_ok.get(asset) or "") <= str(note_.get("since") or ""):
            out[str(asset)] = note_
    return out


def still_lost(
    notes: Mapping[str, dict[str, Any]], database: Path, entries: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The notes whose table is still dropped or emptied: one restored some other way (a backup put back)
    lifts its hold without a full refresh. The warehouse is read only while a note exists."""

    seen = observe(database, list(notes))
    if not seen:  # the warehouse could not be read: keep holding rather than guess
        return dict(notes)
    return {
        asset: note_
        for asset, note_ in notes.items()
        if lost_rows(table_problem(asset, "ingest", True, entries.get(asset), seen.get(asset)))
    }


def note(conn: sqlite3.Connection, asset: str, found: Problem, last_ok: str | None) -> bool:
    """Note the hold; True when it is news (nobody was told of it yet), so the caller tells once."""
    with immediate(conn, f"noting that {asset}'s table is gone"):
        notes = state.get_setting(conn, HELD_KEY) or {}
        notes = notes if isinstance(notes, dict) else {}
        current = live(notes, {asset: last_ok} if last_ok else {})
        if asset in current:
            return False
        notes[asset] = {"since": to_iso(now()), "code": found.code, "message": found.message}
        state.put_setting(conn, HELD_KEY, notes)
    return True
