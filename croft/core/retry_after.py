"""The ``Retry-After`` header in seconds: the one reading for ``ctx.http`` and the webhook."""

from __future__ import annotations

from datetime import datetime
from email.utils import parsedate_to_datetime

from croft.core import clock

__all__ = ["parse_retry_after"]


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), or None if absent/garbled.

    A date in the past means "now" (0). ``now`` defaults to croft's clock so CROFT_NOW moves it too.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = (when - (now or clock.now())).total_seconds()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # nan / inf
        return None
    return max(seconds, 0.0)
