"""The one reader of durations croft accepts in asset settings: ``timeout=`` and an incremental lookback.

``600`` (seconds), ``"90s"``, ``"10m"``, ``"1.5 hours"``, ``"30 days"``, ``"2w"``, ``"1h30m"``. Both ``croft validate``
and a run read them here, so a value one accepts the other never refuses.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["UNITS", "parse_seconds"]

UNITS: dict[str, float] = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "w": 604800.0, "week": 604800.0, "weeks": 604800.0,
}  # fmt: skip
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*")


def parse_seconds(value: Any, *, bare_text: bool = True) -> float | None:
    """Seconds (0 or more) in a number or text such as ``"30 days"``; None when it is not a duration.

    ``bare_text=False`` refuses text without a unit (``"30"``), where a unit is part of what is meant.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value >= 0 and value == value and value != float("inf") else None
    if not isinstance(value, str):
        return None
    match = _DURATION.fullmatch(value.lower())
    if match is None:
        return _compound(value.lower())
    if match.group(2) not in {"", *UNITS} or (not bare_text and not match.group(2)):
        return None
    return float(match.group(1)) * UNITS.get(match.group(2), 1.0)


def _compound(text: str) -> float | None:
    """``1h30m``, ``2 days 4 hours``: every part has its unit."""
    total, pos = 0.0, 0
    while pos < len(text):
        part = _PART.match(text, pos)
        if part is None or part.group(2) not in UNITS or part.end() == pos:
            return None
        total += float(part.group(1)) * UNITS[part.group(2)]
        pos = part.end()
    return total if text.strip() else None
