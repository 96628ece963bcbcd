"""A step's timeout for SQL, enforced inside SQLite: a runaway query (an unbounded recursive CTE) is
stopped by the connection's progress handler and fails as TIMEOUT, not as an out-of-memory crash.

The handler runs every few thousand SQLite instructions; it also lets a Ctrl-C reach a long query (the
signal's Python handler runs when the callback does, and the query is aborted rather than finished).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator

from croft.core.problems import CroftError
from croft.engine import stopping

__all__ = ["INSTRUCTIONS", "sql_deadline"]

INSTRUCTIONS = 10_000  # SQLite virtual-machine steps between two calls of the handler


@contextlib.contextmanager
def sql_deadline(conn: sqlite3.Connection, timeout_s: float, asset: str) -> Iterator[None]:
    """Abort statements on ``conn`` that run past ``timeout_s`` (TIMEOUT) or after a stop signal."""
    deadline = time.monotonic() + timeout_s
    fired = {"timeout": False}

    def check() -> int:
        if stopping.requested():
            return 1
        if time.monotonic() > deadline:
            fired["timeout"] = True
            return 1
        return 0

    conn.set_progress_handler(check, INSTRUCTIONS)
    try:
        yield
    except (CroftError, sqlite3.Error) as exc:
        if stopping.requested():
            raise KeyboardInterrupt from None
        if fired["timeout"]:
            raise CroftError(
                "TIMEOUT",
                f"{asset}'s SQL ran for more than {timeout_s:g} s and was stopped",
                "Look for a recursive CTE without a limit or a join without a condition; add a header line"
                " such as `-- timeout: 30m` if the query is just slow.",
                asset=asset,
                details={"timeoutS": timeout_s},
            ) from exc
        raise
    finally:
        conn.set_progress_handler(None, 0)
