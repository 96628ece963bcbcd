"""A new run's id: ``r_MMDD_HHMM_xxxx``, the minute in the project's zone and 4 random characters.

Apart from the history's readers and writers (``history.runs``), so a command that only reads runs
(``croft logs``, ``croft status``) loads no random source.
"""

from __future__ import annotations

import secrets
import sqlite3
from datetime import datetime

from croft.core.problems import CroftError
from croft.core.zones import zone_named
from croft.history.db import translate_sqlite_errors

__all__ = ["new_run_id"]

_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_ID_TRIES = 50


def new_run_id(now: datetime, tz: str, conn: sqlite3.Connection) -> str:
    """``r_MMDD_HHMM_xxxx``: the minute in the project's zone and 4 random base-36 characters, unused here."""
    local = now.astimezone(zone_named(tz))
    prefix = f"r_{local:%m%d_%H%M}_"
    with translate_sqlite_errors("choosing a run id"):
        for _ in range(_ID_TRIES):
            candidate = prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(4))
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (candidate,)).fetchone() is None:
                return candidate
    raise CroftError(
        "INTERNAL_ERROR",
        f"could not find an unused run id starting {prefix} after {_ID_TRIES} tries",
        "Wait a minute and run again; the run id changes every minute.",
    )
