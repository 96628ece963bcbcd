"""Looking into the warehouse without opening it for writing (no ``Warehouse``, no staging code loaded).

The project tick asks which crashed attempts committed their write anyway (a crash after COMMIT,
before the step row was finished: the write log ``_croft_writes`` has the attempt); ``preview --watch``
asks whether an input table changed. Both open the file read-only and never create it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core import sqlitefile
from croft.engine.reserved import RESERVED_COLUMNS

if TYPE_CHECKING:
    from typing import Any

__all__ = ["committed_attempts", "table_columns", "table_versions"]


def committed_attempts(database: Path, attempts: Iterable[tuple[str, str, int]]) -> set[tuple[str, str, int]]:
    """Those of ``(asset, run_id, attempt)`` whose write the warehouse committed; what cannot be read
    counts as not committed."""
    wanted = list(attempts)
    if not wanted or not Path(database).is_file():
        return set()
    found: set[tuple[str, str, int]] = set()
    try:
        conn = sqlitefile.connect(database, "read", timeout=1.0)
        try:
            for asset, run_id, attempt in wanted:
                row = conn.execute(
                    "SELECT 1 FROM _croft_writes WHERE asset = ? AND run_id = ? AND attempt = ? LIMIT 1",
                    (asset, run_id, attempt),
                ).fetchone()
                if row is not None:
                    found.add((asset, run_id, attempt))
        finally:
            conn.close()
    except sqlite3.Error:
        return found
    return found


def table_versions(database: Path, tables: Iterable[str]) -> tuple[Any, ...]:
    """Per table ``(row count, latest _loaded_at)``, None for a table not built yet (or busy); one
    ``("unreadable",)`` when the file cannot be opened."""
    names = list(tables)
    if not names or not Path(database).exists():
        return ()
    try:
        conn = sqlitefile.connect(database, "read", timeout=1.0)
    except sqlite3.Error:
        return ("unreadable",)
    versions: list[Any] = []
    try:
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            try:
                versions.append(conn.execute(f"SELECT count(*), max(_loaded_at) FROM {quoted}").fetchone())
            except sqlite3.Error:
                versions.append(None)  # not built yet, or busy: a later look sees the change
    finally:
        conn.close()
    return tuple(versions)


def table_columns(database: Path) -> dict[str, list[tuple[str, str]]]:
    """Every table's user columns and declared types, in table order, in one query (``croft context``
    lists them for an agent); {} when the file is missing or cannot be read."""

    if not Path(database).is_file():
        return {}
    found: dict[str, list[tuple[str, str]]] = {}
    try:
        conn = sqlitefile.connect(database, "read", timeout=1.0)
        try:
            rows = conn.execute(
                "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p"
                " WHERE m.type = 'table' AND m.name NOT LIKE '\\_croft\\_%' ESCAPE '\\' ORDER BY m.name, p.cid"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return found
    for table, column, kind in rows:
        if column not in RESERVED_COLUMNS:
            found.setdefault(table, []).append((column, kind or ""))
    return found
