"""One asset paused: the scheduler starts nothing for it until the pause ends or a person resumes it.

A project's pause (``scheduler.setting``) stops everything; an asset's pause stops one asset while the
rest of its project runs. The pauses live in runs.sqlite (settings ``schedule.pausedAssets``: asset ->
``{"since", "until"}``), beside the project's own setting, so the tick, ``croft run --due``, status and the
flight plan (``scheduler.simulate``) read the same record and decide through ``asset_pause_hold``: one
rule, one place. A pause whose ``until`` has passed reads as no pause; a run by hand is never held.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from croft.core.clock import parse_instant, to_iso
from croft.history.state import get_setting, put_setting

__all__ = [
    "PAUSES_KEY",
    "active_pauses",
    "asset_pause_hold_words",
    "pause_ends",
    "read_pauses",
    "resume",
    "write_pause",
]

PAUSES_KEY = "schedule.pausedAssets"


def _until(entry: Any) -> str | None:
    until = entry.get("until") if isinstance(entry, dict) else None
    return until if isinstance(until, str) and until else None


def _parsed(entry: Any) -> datetime | None:
    until = _until(entry)
    if until is None:
        return None
    try:
        return parse_instant(until)
    except ValueError:
        return None


def active_pauses(pauses: Mapping[str, Any], now: datetime) -> dict[str, str | None]:
    """asset -> the end of its pause (None: until resumed), for the pauses still in force at ``now``.
    An entry with an end croft cannot read counts as a pause until resumed: never a run on a guess."""
    out: dict[str, str | None] = {}
    for asset, entry in pauses.items():
        end = _parsed(entry)
        if _until(entry) is not None and end is None:
            out[asset] = None
        elif end is None or end > now:
            out[asset] = _until(entry)
    return out


def asset_pause_hold_words(asset: str, until: str | None, words: str | None) -> tuple[str, str]:
    """(reason, hint) of a paused asset's hold; ``words`` says ``until`` on the reader's clock."""
    when = f" until {words}" if until and words else ""
    return (
        f"paused{when}; croft schedule resume {asset} resumes it",
        f"croft schedule resume {asset} lets the scheduler run it again; croft run {asset} runs it now",
    )


def pause_ends(pauses: Mapping[str, Any], now: datetime) -> list[datetime]:
    """The ends still to come of timed pauses: each is an instant a tick must look again."""
    return sorted(end for entry in pauses.values() if (end := _parsed(entry)) is not None and end > now)


def read_pauses(conn: sqlite3.Connection | None) -> dict[str, Any]:
    """The stored pauses (asset -> ``{"since", "until"}``); anything malformed reads as none stored."""
    if conn is None:
        return {}
    found = get_setting(conn, PAUSES_KEY)
    return {str(k): v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}


def write_pause(
    conn: sqlite3.Connection, asset: str, now: datetime, until: datetime | None
) -> dict[str, Any]:
    """Pause ``asset`` (``until`` None: until resumed); returns the pauses in force (ended ones dropped)."""
    pauses = {a: e for a, e in read_pauses(conn).items() if a in active_pauses({a: e}, now)}
    pauses[asset] = {"since": to_iso(now), "until": to_iso(until) if until else None}
    put_setting(conn, PAUSES_KEY, pauses)
    return pauses


def resume(conn: sqlite3.Connection, asset: str, now: datetime) -> bool:
    """Resume ``asset``; whether it was paused then."""
    stored = read_pauses(conn)
    was = asset in active_pauses(stored, now)
    stored.pop(asset, None)
    put_setting(conn, PAUSES_KEY, stored)
    return was
