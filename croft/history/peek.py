"""One read-only query of a SQLite file that may not exist: status views and the per-user tick look into a
project's runs.sqlite without creating, migrating or locking it for writing.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from typing import TYPE_CHECKING

from croft.core import sqlitefile
from croft.core.paths import stat_of

if TYPE_CHECKING:
    from typing import Any

__all__ = ["peek"]


def peek(
    path: str | os.PathLike[str],
    sql: str,
    params: tuple[Any, ...] = (),
    timeout: float = 1.0,
    *,
    strict: bool = False,
) -> list[tuple[Any, ...]] | None:
    """The rows of ``sql``; None when the file is missing or sqlite cannot read it (no table, not a database).

    ``strict``: only a missing file (or an empty database, which has no table yet) is None; a file that
    is there but cannot be read (no permission, not a database, a full or read-only disk) raises its
    OSError or sqlite3.Error, for the callers that must never mistake a broken file for an empty one.
    """
    if strict:
        return _strict(path, sql, params, timeout)
    if not _is_file(path):
        return None
    try:
        conn = sqlitefile.connect(path, "read", timeout=timeout)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def _is_file(path: str | os.PathLike[str]) -> bool:
    """``Path.is_file``, errors and all, without pathlib: the per-user tick's hourly look peeks by text."""
    found = stat_of(path)
    return found is not None and stat.S_ISREG(found.st_mode)


def _strict(
    path: str | os.PathLike[str], sql: str, params: tuple[Any, ...], timeout: float
) -> list[tuple[Any, ...]] | None:
    try:
        os.stat(path)  # not is_file(): a folder without permission must not read as "no file"
    except (FileNotFoundError, NotADirectoryError):
        return None
    conn = sqlitefile.connect(path, "read", timeout=timeout)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if (getattr(exc, "sqlite_errorcode", 0) or 0) == sqlite3.SQLITE_ERROR and _empty(conn):
            return None  # an empty database (a 0-byte file): no table yet, nothing recorded
        raise
    finally:
        conn.close()


def _empty(conn: sqlite3.Connection) -> bool:
    try:
        return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    except sqlite3.Error:
        return False
