"""The warehouse's sqlite3 boundary: sqlite3 exceptions become CroftErrors, by result code and class."""

from __future__ import annotations

import shlex
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from croft.core import sqlitefile
from croft.core.problems import CroftError
from croft.history.db import BUSY_TIMEOUT_MS

__all__ = ["BUSY_TIMEOUT_MS", "problem_for", "translating"]


@contextmanager
def translating(
    path: Path, asset: str | None, what: str, *, user_sql: bool = False, waited_ms: int = BUSY_TIMEOUT_MS
) -> Iterator[None]:
    """Turn sqlite3's exceptions into CroftErrors, by result code and class (never by message text)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise problem_for(exc, asset, what, path, user_sql=user_sql, waited_ms=waited_ms) from exc


def problem_for(
    exc: sqlite3.Error,
    asset: str | None,
    what: str,
    path: Path,
    *,
    user_sql: bool = False,
    waited_ms: int = BUSY_TIMEOUT_MS,
) -> CroftError:
    """The CroftError for a sqlite3 error met while doing ``what`` on the warehouse at ``path``."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    where = {"asset": asset} if asset else {}
    details = {"sqlite": str(exc), "file": str(path)}
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return CroftError(
            "DB_BUSY",
            f"{what}: {path.name} stayed locked by another writer for more than {waited_ms / 1000:g} s.",
            "Another croft run (or a program with the warehouse open) is writing; try again in a moment.",
            retryable=True,
            details=details,
            **where,
        )
    machine = sqlitefile.machine_problem(exc, what, path)
    if machine is not None:
        return CroftError(machine.with_(**where))
    if code == sqlite3.SQLITE_AUTH:
        return CroftError(
            "SQL_NOT_SELECT",
            f"{what}: the SQL tries to do more than read ({exc}).",
            "SQL assets and checks may only read: one SELECT (CTEs allowed), no INSERT, UPDATE, DELETE, "
            "CREATE, ATTACH or PRAGMA.",
            details=details,
            **where,
        )
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        aside = f"mv {shlex.quote(str(path))} {shlex.quote(str(path) + '.corrupt')}"
        return CroftError(
            "WAREHOUSE_CORRUPT",
            f"{what}: {path} is not a readable SQLite database ({exc}).",
            "The warehouse file is damaged (a copy cut short, a disk fault, another program's file in its"
            " place); this is not a bug in croft. Restore it from a backup, or move it aside (the fix) and"
            " run every asset again with `croft run`: ingests fetch their rows anew.",
            fix={
                "kind": "command",
                "command": aside,
                "description": "keep the damaged file and start a new one",
            },
            details=details,
            **where,
        )
    if user_sql and isinstance(exc, sqlite3.ProgrammingError):
        return CroftError(
            "SQL_NOT_ONE_STATEMENT",
            f"{what}: the SQL holds more than one statement.",
            "A SQL asset is exactly one SELECT; split other statements into their own assets.",
            details=details,
            **where,
        )
    if user_sql:
        return CroftError(
            "SQL_ERROR",
            f"{what}: {exc}",
            "Fix the SQL; `croft validate` checks it against the current tables.",
            details=details,
            **where,
        )
    return CroftError(
        "INTERNAL_ERROR",
        f"{what}: the warehouse failed with {type(exc).__name__}: {exc}",
        "Check that the warehouse file is writable and the disk is not full; if it keeps happening, "
        "report it.",
        details={**details, "class": type(exc).__name__},
        **where,
    )
