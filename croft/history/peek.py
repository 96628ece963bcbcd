"""One read-only query of a SQLite file that may not exist: status views and the per-user tick look into a
project's runs.sqlite without creating, migrating or locking it for writing.

Only sqlite3 is imported, so the per-user tick can use it every minute.
"""

from __future__ import annotations

import sqlite3

from croft.core import sqlitefile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = ["peek"]


def peek(
    path: Path, sql: str, params: tuple[Any, ...] = (), timeout: float = 1.0
) -> list[tuple[Any, ...]] | None:
    """The rows of ``sql``; None when the file is missing or sqlite cannot read it (no table, not a database)."""
    if not path.is_file():
        return None
    try:
        conn = sqlitefile.connect(path, "read", timeout=timeout)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
