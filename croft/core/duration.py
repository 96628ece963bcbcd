"""Durations both ways: the one reader of what croft accepts (``timeout=``, a lookback, ``--for``) and the
one writer of how a length of time reads in a message.

``600`` (seconds), ``"90s"``, ``"10m"``, ``"1.5 hours"``, ``"30 days"``, ``"2w"``, ``"1h30m"``. Both ``croft validate``
and a run read them here, so a value one accepts the other never refuses; every message that says how
long something lasted or waits says it through ``words``, so two messages never put the same length two ways.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["UNITS", "parse_seconds", "words"]

UNITS: dict[str, float] = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "w": 604800.0, "week": 604800.0, "weeks": 604800.0,
}  # fmt: skip
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")
# for compound durations only: compiled (and cached by re) when one is read, not on import
_PART = r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*"


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
    total, pos, part_at = 0.0, 0, re.compile(_PART).match
    while pos < len(text):
        part = part_at(text, pos)
        if part is None or part.group(2) not in UNITS or part.end() == pos:
            return None
        total += float(part.group(1)) * UNITS[part.group(2)]
        pos = part.end()
    return total if text.strip() else None


def words(seconds: float) -> str:
    """A length of time as a message says it: ``300 ms``, ``45 s``, ``10 min``, ``7 h 12 min``, ``3 days 4 h``.

    Below a second in milliseconds; below two minutes in seconds (one decimal at most) unless it is a
    whole minute; below two hours in whole minutes; below two days in hours and minutes; beyond, in days
    and hours.
    """
    if seconds < 1:
        return f"{round(max(seconds, 0) * 1000)} ms"
    if seconds < 60 or (seconds < 120 and seconds % 60):
        return f"{round(seconds, 1):g} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    if minutes < 48 * 60:
        hours, rest = divmod(minutes, 60)
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    days, rest = divmod(minutes // 60, 24)
    return f"{days} days {rest} h" if rest else f"{days} days"
