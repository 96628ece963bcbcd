"""Step logs: a file while the step runs, a row of runs.sqlite once it has ended.

A log is a few lines (the rows written, a retry, an error), and a file for each would take a disk
block for 44 bytes: 100k runs made 200k files and most of a gigabyte under ``.croft/``. So the step
writes its file as before (``engine.context.StepLog``: line by line, flushed, so a crash leaves what
was said and ``croft logs`` can show a running step), and when the attempt ends its text moves into
``step_logs`` and the file goes. An empty log leaves no row. A crashed step's log is still its file,
which ``text`` reads when there is no row; pruning removes both.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from croft.history.db import immediate, translate_sqlite_errors

__all__ = ["keep", "text"]


def keep(conn: sqlite3.Connection, run_id: str, asset: str, attempt: int, path: Path) -> bool:
    """Move the ended attempt's log file into the history; True when the file is gone. A file that
    cannot be read or a write that fails (a full disk) leaves the file where it is: it is still the log."""
    try:
        body = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if body:
            with immediate(conn, f"keeping the log of {asset} (attempt {attempt})"):
                conn.execute(
                    "INSERT OR REPLACE INTO step_logs (run_id, asset, attempt, text) VALUES (?, ?, ?, ?)",
                    (run_id, asset, attempt, body),
                )
    except Exception:  # the file stays the log: nothing is lost, and the step's result stands
        return False
    with contextlib.suppress(OSError):
        path.unlink()
    return True


@translate_sqlite_errors("reading a step's log")
def text(conn: sqlite3.Connection, run_id: str, asset: str, attempt: int, path: str | None) -> str | None:
    """The attempt's log: its row, else its file (still running, crashed, or older); None when it has
    neither."""
    row = conn.execute(
        "SELECT text FROM step_logs WHERE run_id = ? AND asset = ? AND attempt = ?", (run_id, asset, attempt)
    ).fetchone()
    if row is not None:
        return str(row[0])
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
