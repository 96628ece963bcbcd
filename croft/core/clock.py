"""The one clock croft reads: real time, or ``CROFT_NOW`` (ISO-8601 or epoch milliseconds) when set.

Everything that needs "now" asks here, so a test that sets CROFT_NOW moves every part of croft at once,
including the times written to runs.sqlite.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

from croft.core import knobs
from croft.core.instant import FIRST_YEAR, LAST_YEAR, parse_instant

__all__ = ["FIRST_YEAR", "LAST_YEAR", "from_iso", "now", "parse_instant", "pause", "to_iso"]


def now() -> datetime:
    """The current instant as an aware UTC datetime, honouring CROFT_NOW (read through the knobs table:
    a bad value is CLOCK_INVALID)."""
    if os.environ.get("CROFT_NOW"):
        moment: datetime | None = knobs.value("CROFT_NOW")  # None: blank, which reads as unset
        if moment is not None:
            return moment
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    """UTC text with milliseconds and ``Z``: fixed width, so string order is time order in SQLite."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def from_iso(text: str) -> datetime:
    return parse_instant(text)


def pause(seconds: float) -> None:
    """Every wait of a run or a notification (retry delays, Retry-After, webhook backoff) goes through
    here: the clock's other half, so tests record waits instead of sleeping."""

    time.sleep(seconds)
