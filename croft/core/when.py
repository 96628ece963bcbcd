"""The one way an instant reads in text meant for a person: the reader's local time, short, with its
distance from now where that helps.

``08:24`` today, ``Tue 09:00`` within a week either side, ``Mar 3 09:00`` further, ``Mar 3 2025 09:00``
in another year; ``08:24 (2 min ago)`` and ``09:00 (in 36 min)`` with the distance. Machine output
(``--json``, the history, logs on disk) keeps ISO-8601 UTC; only what a person reads goes through here.

The reader's zone is the machine's: ``TZ`` when set, else ``/etc/localtime``. Where it differs from the
project's zone, a screen names it once (``zone_note``).
"""

from __future__ import annotations

import os
import re
from datetime import datetime, tzinfo
from functools import lru_cache

from croft.core.clock import parse_instant
from croft.core.duration import words
from croft.core.zones import zone_named

__all__ = ["clock", "in_text", "local_zone", "moment", "relative", "stamp", "zone_note"]

WEEK_DAYS = 6  # a date within this many days of today reads by its weekday


@lru_cache(maxsize=8)
def _zone_of(tz_env: str | None) -> tuple[tzinfo, str]:
    name = (tz_env or "").lstrip(":")
    if not name:
        try:
            link = os.readlink("/etc/localtime")
        except OSError:
            link = ""
        name = link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else ""
    if name:
        try:
            return zone_named(name), name
        except (ValueError, KeyError, OSError):
            pass
    here = datetime.now().astimezone().tzinfo
    return (here, str(here)) if here is not None else (zone_named("UTC"), "UTC")


def local_zone() -> tuple[tzinfo, str]:
    """The reader's zone and its name (an IANA name where the machine says one)."""
    return _zone_of(os.environ.get("TZ"))


def _as_instant(value: str | datetime) -> datetime:
    return parse_instant(value) if isinstance(value, str) else value


def clock(instant: str | datetime, now: datetime, zone: tzinfo | None = None) -> str:
    """``instant`` as the reader's clock shows it, as short as today's date allows."""
    where = zone or local_zone()[0]
    local, today = _as_instant(instant).astimezone(where), now.astimezone(where)
    days = abs((local.date() - today.date()).days)
    if days == 0:
        return f"{local:%H:%M}"
    if days <= WEEK_DAYS:
        return f"{local:%a %H:%M}"
    if local.year == today.year:
        return f"{local:%b} {local.day} {local:%H:%M}"
    return f"{local:%b} {local.day} {local.year} {local:%H:%M}"


def stamp(instant: str | datetime, zone: tzinfo | None = None) -> str:
    """``08:24:05``: the reader's clock to the second, for the lines of a log (where seconds order them)."""
    return f"{_as_instant(instant).astimezone(zone or local_zone()[0]):%H:%M:%S}"


# An instant as machines write it (``to_iso``, ``isoformat``): a date, a time with seconds, and a zone.
# Compiled (and cached by re) for the first message with a "T" in it, not by every command that imports this.
_MACHINE_INSTANT = r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"


def in_text(text: str, now: datetime, zone: tzinfo | None = None) -> str:
    """``text`` with every machine-written instant in it as ``clock`` shows it: messages are built once,
    with ISO-8601 UTC for ``--json``, and read by a person through here. An instant a person typed in an
    example (``2026-11-30T08:00Z``, no seconds) is left as written."""
    if "T" not in text:
        return text
    return re.sub(_MACHINE_INSTANT, lambda m: _clock_or_same(m.group(0), now, zone), text)


def _clock_or_same(found: str, now: datetime, zone: tzinfo | None) -> str:
    try:
        return clock(found, now, zone)
    except ValueError:
        return found


def relative(instant: str | datetime, now: datetime) -> str:
    """How far ``instant`` is from ``now``: ``just now``, ``2 min ago``, ``in 36 min``."""
    seconds = (_as_instant(instant) - now).total_seconds()
    if abs(seconds) < 60:
        return "just now" if seconds <= 0 else "in under a minute"
    length = words(round(abs(seconds) / 60) * 60)
    return f"in {length}" if seconds > 0 else f"{length} ago"


def moment(instant: str | datetime, now: datetime, zone: tzinfo | None = None) -> str:
    """``08:24 (2 min ago)``: the clock and the distance, for the instants a person acts on."""
    return f"{clock(instant, now, zone)} ({relative(instant, now)})"


_UTC = frozenset({"UTC", "Etc/UTC", "Etc/Universal", "Etc/Zulu", "Universal", "Zulu", "GMT", "Etc/GMT"})


def zone_note(project_zone: str) -> str | None:
    """``times in Europe/Berlin`` when the reader's zone is not the project's, else None."""
    name = local_zone()[1]
    if name == project_zone or (name in _UTC and project_zone in _UTC):
        return None
    return f"times in {name}"
