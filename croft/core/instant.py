"""Reading an instant: the one parser of the times croft is given (``CROFT_NOW``, ``--since``, stored
history times). Its own module so the knobs table (``core.knobs``) and the clock both use it without
importing each other."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["FIRST_YEAR", "LAST_YEAR", "parse_instant"]

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
