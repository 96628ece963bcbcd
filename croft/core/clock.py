"""The one clock croft reads: real time, or ``CROFT_NOW`` (ISO-8601 or epoch milliseconds) when set.

Everything that needs "now" asks here, so a test that sets CROFT_NOW moves every part of croft at once,
including the times written to runs.sqlite.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

__all__ = ["FIRST_YEAR", "LAST_YEAR", "from_iso", "now", "parse_instant", "pause", "to_iso"]

FIRST_YEAR, LAST_YEAR = 2, 9998


def parse_instant(text: str) -> datetime:
    """Parse an ISO-8601 instant (``Z`` or offset; naive means UTC) or epoch milliseconds into aware UTC.

    Raises ValueError with a sentence that names the value.
    """
    raw = text.strip()
    if not raw:
        raise ValueError("an empty time")
    try:
        if raw.lstrip("-").isdigit():
            value = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=int(raw))
        else:
            value = datetime.fromisoformat(raw.replace("z", "Z").replace("Z", "+00:00"))
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
    except OverflowError:
        value = None
    except ValueError:
        raise ValueError(f"{raw[:40]!r} is not an ISO-8601 time or epoch milliseconds") from None
    if value is None or not FIRST_YEAR <= value.year <= LAST_YEAR:
        # Zones, lookbacks and the next fires are computed around an instant: keep a year of room either side.
        raise ValueError(f"{raw[:40]!r} is outside the years {FIRST_YEAR} to {LAST_YEAR} croft computes with")
    return value


def now() -> datetime:
    """The current instant as an aware UTC datetime, honouring CROFT_NOW."""
    fake = os.environ.get("CROFT_NOW")
    if fake:
        try:
            return parse_instant(fake)
        except ValueError as exc:
            from croft.core.problems import CroftError

            raise CroftError(
                "CLOCK_INVALID",
                f"CROFT_NOW={fake!r} is not a time: {exc}",
                "Set CROFT_NOW to an ISO-8601 instant such as 2026-03-08T09:00:00Z or to epoch milliseconds,"
                " or unset it to use the real clock.",
            ) from None
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
    import time

    time.sleep(seconds)
