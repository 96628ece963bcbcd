"""What ``croft schedule on|status`` lists per asset: schedule, cron, next and last fire, missed fires, held.

This reads only what exists without a tick: the assets' static facts, their schedules and the
``schedule_state`` rows (read-only). ``asset_rows`` is the one seam a richer due view (the project
tick's own "what is due and why") can replace, as long as it returns the same row shape.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from croft.core.clock import from_iso, to_iso
from croft.core.problems import CroftError
from croft.project.config import Project

__all__ = ["asset_rows", "held_rows"]

MISSED_CAP = 100


def _state_rows(state_dir: Path) -> dict[str, dict[str, Any]]:
    path = state_dir / "runs.sqlite"
    if not path.is_file():
        return {}
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0)
        conn.row_factory = sqlite3.Row
        try:
            return {r["asset"]: dict(r) for r in conn.execute("SELECT * FROM schedule_state")}
        finally:
            conn.close()
    except sqlite3.Error:
        return {}


def asset_rows(project: Project, now: datetime) -> list[dict[str, Any]]:
    """One row per asset: ``{asset, kind, schedule, cron, nextFire, lastFire, missedFires, due, held}``."""
    from croft.project.discovery import discover
    from croft.project.fingerprint import code_hash
    from croft.schedule.cron import latest_fire_at_or_before, next_fire, next_fires
    from croft.schedule.phrase import parse_schedule

    facts, _ = discover(project)
    states = _state_rows(project.config.state_dir)
    tz = project.config.timezone
    rows = []
    for name, f in facts.items():
        row: dict[str, Any] = {
            "asset": name,
            "kind": f.kind,
            "schedule": f.schedule,
            "cron": None,
            "nextFire": None,
            "lastFire": None,
            "missedFires": 0,
            "due": False,
            "held": None,
        }
        state = states.get(name) or {}
        row["lastFire"] = state.get("last_fire_at")
        if not f.ok:
            row["held"] = {
                "code": f.problems[0].code,
                "why": f.problems[0].message,
                "release": "croft validate",
            }
            rows.append(row)
            continue
        if f.schedule:
            parsed = parse_schedule(f.schedule)
            if hasattr(parsed, "cron"):
                row["cron"] = parsed.cron
                upcoming = next_fire(parsed.cron, tz, now)
                row["nextFire"] = to_iso(upcoming) if upcoming else None
                latest = latest_fire_at_or_before(parsed.cron, tz, now)
                last = row["lastFire"]
                if latest is not None and (last is None or to_iso(latest) > last):
                    row["due"] = True
                    if last is not None:
                        fires = next_fires(parsed.cron, tz, from_iso(last), MISSED_CAP)
                        row["missedFires"] = sum(1 for x in fires if x <= now)
        if f.kind == "ingest" or f.inputs:
            try:
                digest: str | None = code_hash(project, f)
            except CroftError:
                digest = None
            if digest is None or state.get("approved_code_hash") != digest:
                row["held"] = {
                    "code": "SCHEDULE_HELD",
                    "why": "no person has run this version of its code yet, so the scheduler will not",
                    "release": f"croft run {name}",
                }
        rows.append(row)
    return rows


def held_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["held"] and (r["schedule"] or r["kind"] != "ingest")]
