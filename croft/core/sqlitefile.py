"""How croft opens a SQLite file: the one place a connection is made, whoever owns the file.

Three ways, because three kinds of caller: ``create`` (the file may be made: history, warehouse,
slots), ``write`` (the file must exist: the idle tick never creates a project's history) and ``read``
(status views and the per-user tick look without writing or locking). A path goes into a ``file:`` URI
with ``%``, ``?`` and ``#`` escaped, so a folder named ``a?b`` or ``50%`` opens the file it names.

Only sqlite3 is imported: the every-minute tick opens files through here.
"""

from __future__ import annotations

import sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from typing import Literal

__all__ = ["connect", "uri"]

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
