"""How croft opens a SQLite file: the one place a connection is made, whoever owns the file.

Three ways, because three kinds of caller: ``create`` (the file may be made: history, warehouse,
slots), ``write`` (the file must exist: the idle tick never creates a project's history) and ``read``
(status views and the per-user tick look without writing or locking). A path goes into a ``file:`` URI
with ``%``, ``?`` and ``#`` escaped, so a folder named ``a?b`` or ``50%`` opens the file it names.

Only sqlite3 is imported: the every-minute tick opens files through here.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

from croft.core import disk

if TYPE_CHECKING:
    from typing import Literal

    from croft.core.problems import Problem

__all__ = ["connect", "machine_problem", "uri"]

_MODES = {"create": "rwc", "write": "rw", "read": "ro"}
_ESCAPES = str.maketrans({"%": "%25", "?": "%3f", "#": "%23"})


def uri(path: str | os.PathLike[str], mode: Literal["create", "write", "read"]) -> str:
    return f"file:{str(path).translate(_ESCAPES)}?mode={_MODES[mode]}"


def connect(
    path: str | os.PathLike[str],
    mode: Literal["create", "write", "read"] = "create",
    *,
    timeout: float = 5.0,
    autocommit: bool = True,
    any_thread: bool = False,
) -> sqlite3.Connection:
    """A connection to ``path`` that waits up to ``timeout`` seconds for a lock (also as SQLite's own
    busy timeout). ``autocommit``: croft opens its transactions itself (``BEGIN IMMEDIATE``).
    ``any_thread``: the caller hands the connection to a worker thread and never uses it from two at once."""
    conn = sqlite3.connect(
        uri(path, mode),
        uri=True,
        timeout=timeout,
        isolation_level=None if autocommit else "DEFERRED",
        check_same_thread=not any_thread,
    )
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    return conn


# SQLite's primary result codes that mean the machine refused (space, permission, the disk itself).
_MACHINE = (
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_PERM,
    sqlite3.SQLITE_IOERR,
)


def machine_problem(exc: BaseException, what: str, path: str | os.PathLike[str] | None) -> Problem | None:
    """DISK_FULL or PATH_UNWRITABLE when SQLite's error is the machine's (a full or read-only disk, no
    permission, an I/O error), naming ``path``; None for any other error. By result code, never by
    message; an I/O error (SQLite says "disk I/O error" when a full disk will not even take a reader's
    shared-memory file) is told apart by looking at the disk."""

    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code not in _MACHINE:
        return None
    where = str(path) if path is not None else "a croft database"
    folder = _folder(path)
    if code == sqlite3.SQLITE_FULL:
        return disk.disk_full(what, where, str(exc))
    looked = disk.folder_problem(folder, what) if folder is not None else None
    if looked is not None:
        return looked.with_(details={**(looked.details or {}), "sqlite": str(exc), "file": where})
    if code == sqlite3.SQLITE_CANTOPEN:
        return disk.cannot_open(what, where, str(exc))
    return disk.unwritable(what, where, str(exc), read_only=code == sqlite3.SQLITE_READONLY)


def _folder(path: str | os.PathLike[str] | None) -> str | None:

    if path is None or str(path) in ("", ":memory:"):
        return None
    full = os.path.abspath(path)
    return full if os.path.isdir(full) else os.path.dirname(full)
