"""Quiet hours: wall-clock windows (``"22:00-06:00"``, in the project's zone) in which the scheduler
starts nothing. A fire inside one runs once when the window ends (several fires in one window coalesce,
as missed fires do); a run by hand is never affected. A window may cross midnight; its end is found by
the zone's rules on the day it ends, so a daylight-saving change inside the window moves the instant,
not the wall time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta

from croft.core.zones import zone

__all__ = ["Window", "parse_windows", "quiet_end", "quiet_start", "window_problem"]

_WINDOW = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*-\s*([01]?\d|2[0-3]):([0-5]\d)\s*$")
MAX_WINDOWS = 24

Window = tuple[int, int]  # (first minute of the day inside, first minute after), wall clock


def window_problem(value: object) -> str | None:
    """Why ``value`` is no list of quiet windows (the words after the option's name), or None. The one
    rule croft.json's ``quiet``, the decorator's ``quiet=`` and ``croft validate`` use."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):  # [] says none: an ingest's way out of the project's hours
        return 'must be a list of "HH:MM-HH:MM" windows, such as ["22:00-06:00"]'
    if len(value) > MAX_WINDOWS:
        return f"has {len(value)} windows; at most {MAX_WINDOWS}"
    for item in value:
        found = _WINDOW.match(item) if isinstance(item, str) else None
        if found is None:
            return f'has {str(item)[:40]!r}, not a "HH:MM-HH:MM" window such as "22:00-06:00"'
        start, end = int(found[1]) * 60 + int(found[2]), int(found[3]) * 60 + int(found[4])
        if start == end:
            return f"has {item!r}, which starts where it ends; give a window that ends at another time"
    return None


def parse_windows(value: Sequence[str] | str | None) -> tuple[Window, ...]:
    """The windows of a valid value (``window_problem`` said None); () for None."""
    if not value:
        return ()
    out = []
    for item in [value] if isinstance(value, str) else value:
        found = _WINDOW.match(item)
        if found:
            out.append((int(found[1]) * 60 + int(found[2]), int(found[3]) * 60 + int(found[4])))
    return tuple(out)


def _inside(minute: int, window: Window) -> bool:
    start, end = window
    return start <= minute < end if start < end else minute >= start or minute < end


def _end_of(at_local: datetime, window: Window, tz: str) -> datetime:
    start, end = window
    day = at_local.date()
    if start > end and at_local.hour * 60 + at_local.minute >= start:
        day += timedelta(days=1)  # a window across midnight, entered before it: it ends tomorrow
    wall = datetime.combine(day, time(end // 60, end % 60), tzinfo=zone(tz))
    return wall.astimezone(UTC)


def quiet_end(at: datetime, windows: Sequence[Window], tz: str) -> datetime:
    """``at`` itself when it is in no window, else the instant the scheduler may start again (the end of
    the window it is in, and of any window that end falls in)."""
    if not windows:
        return at
    for _ in range(len(windows) + 1):
        local = at.astimezone(zone(tz))
        minute = local.hour * 60 + local.minute
        inside = [w for w in windows if _inside(minute, w)]
        if not inside:
            return at
        at = max(_end_of(local, w, tz) for w in inside)
    return at


def quiet_start(at: datetime, windows: Sequence[Window], tz: str) -> datetime | None:
    """When the window ``at`` is in began (the earliest start of those it is in), or None outside all."""
    local = at.astimezone(zone(tz))
    minute = local.hour * 60 + local.minute
    starts = []
    for w in windows:
        if not _inside(minute, w):
            continue
        start, end = w
        day = local.date()
        if start > end and minute < end:
            day -= timedelta(days=1)  # a window across midnight, now after it: it began yesterday
        starts.append(datetime.combine(day, time(start // 60, start % 60), tzinfo=zone(tz)).astimezone(UTC))
    return min(starts) if starts else None
