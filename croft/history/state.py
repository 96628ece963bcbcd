"""The scheduler's memory in runs.sqlite: per-asset schedule state, JSON settings and the tick row.

``put_schedule_state`` writes only the columns it is given, so the tick (fires), the facts refresh
(hash, phrase, cron) and a human run (approved code) never overwrite each other's columns.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

from croft.core.clock import to_iso
from croft.core.identity import ProcessIdentity
from croft.history import tickrow
from croft.history.db import immediate, translate_sqlite_errors

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "SCHEDULE_COLUMNS",
    "all_schedule_state",
    "claim_tick",
    "delete_setting",
    "get_schedule_state",
    "get_setting",
    "put_schedule_state",
    "put_setting",
    "read_tick",
    "release_tick",
    "write_tick",
]

SCHEDULE_COLUMNS = ("phrase", "cron", "file_hash", "last_fire_at", "last_attempt_at", "approved_code_hash")


@translate_sqlite_errors("reading the schedule state")
def get_schedule_state(conn: sqlite3.Connection, asset: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM schedule_state WHERE asset = ?", (asset,)).fetchone()
    return None if row is None else dict(row)


@translate_sqlite_errors("reading the schedule state")
def all_schedule_state(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Every asset's row in one query, keyed by asset."""
    return {r["asset"]: dict(r) for r in conn.execute("SELECT * FROM schedule_state")}


def put_schedule_state(conn: sqlite3.Connection, asset: str, **columns: str | datetime | None) -> None:
    """Upsert the asset's row, setting only the given columns (datetimes are stored as ISO UTC)."""
    unknown = set(columns) - set(SCHEDULE_COLUMNS)
    assert not unknown, f"not schedule_state columns: {sorted(unknown)}"
    names = [c for c in SCHEDULE_COLUMNS if c in columns]  # whitelisted, so safe to format into SQL
    values = [to_iso(v) if isinstance(v, datetime) else v for v in (columns[c] for c in names)]
    with immediate(conn, f"saving the schedule state of {asset}"):
        if not names:
            conn.execute("INSERT OR IGNORE INTO schedule_state (asset) VALUES (?)", (asset,))
            return
        conn.execute(
            f"INSERT INTO schedule_state (asset, {', '.join(names)})"
            f" VALUES (?, {', '.join('?' for _ in names)})"
            f" ON CONFLICT(asset) DO UPDATE SET {', '.join(f'{n} = excluded.{n}' for n in names)}",
            [asset, *values],
        )


@translate_sqlite_errors("reading a setting")
def get_setting(conn: sqlite3.Connection, key: str, default: Any = None) -> Any:
    """The setting's JSON value, or ``default`` when it is missing."""
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return default if row is None else json.loads(row["value"])


def put_setting(conn: sqlite3.Connection, key: str, value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    with immediate(conn, f"saving the setting {key}"):
        conn.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, text),
        )


def delete_setting(conn: sqlite3.Connection, key: str) -> None:
    with immediate(conn, f"removing the setting {key}"):
        conn.execute("DELETE FROM settings WHERE key = ?", (key,))


@translate_sqlite_errors("reading the tick row")
def read_tick(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """``{pid, proc_start, boot_id, heartbeat_at}`` of the tick row, or None before the first tick."""
    row = conn.execute("SELECT pid, proc_start, boot_id, heartbeat_at FROM tick WHERE id = 1").fetchone()
    return None if row is None else dict(row)


def write_tick(conn: sqlite3.Connection, who: ProcessIdentity, heartbeat_at: str) -> None:
    """Record the heartbeat and the tick process that wrote it."""
    with immediate(conn, "writing the tick heartbeat"):
        tickrow.heartbeat(conn, who, heartbeat_at)


def claim_tick(conn: sqlite3.Connection, who: ProcessIdentity) -> ProcessIdentity | None:
    """Make ``who`` the project's one running tick; returns the live other tick instead when there is one.

    A holder whose process is gone is taken over. The heartbeat is left as it was.
    """

    with immediate(conn, "claiming the project's tick"):
        return tickrow.claim(conn, who)


def release_tick(conn: sqlite3.Connection, who: ProcessIdentity) -> None:
    """Let go of the tick claim if ``who`` still holds it; the heartbeat stays."""

    with immediate(conn, "releasing the project's tick"):
        tickrow.release(conn, who)
