"""What stops the scheduler from ticking a project, remembered so it is told once and shown everywhere.

A tick that fails (the project's tick itself, or the per-user tick finding the project's folder full,
read-only or its history unreadable) leaves an incident: ``<CROFT_HOME>/incidents/<key>.json`` with
the problem, since when and whether it was told. ``croft status``, ``croft schedule status`` and ``croft
doctor`` read it, so a scheduler that fails every minute is never reported as healthy; the next tick
that succeeds removes it, so scheduling that resumes by itself clears it by itself.

It lives in croft's home, not the project's state folder, because that folder may be what is broken. One
file per project, so project ticks running side by side never rewrite each other's. A new incident
(no file, or another code than the one recorded) is told once, desktop and webhook, as a failed run is;
when croft cannot even record it (the disk holding its home is full too) it tells at most once an hour
rather than every minute.

Only ``os``, ``json`` and ``zlib`` are imported (and croft's JSON file writer): the per-user tick checks
for an incident every minute.
"""

from __future__ import annotations

import os
import zlib
from datetime import timedelta
from json import loads
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.clock import parse_instant, to_iso
from croft.core.jsonfile import write_atomic
from croft.core.paths import home_text

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from croft.core.problems import Problem

__all__ = ["CLOCK", "FOLDER", "clear", "clock_shown", "incident_path", "read", "record"]

FOLDER = "incidents"
CLOCK = "clock"  # the source of a CLOCK_MOVED_BACK incident (scheduler.tick.clockback): no tick failed
CLOCK_SHOWN_DAYS = 1  # at most: a mark years ahead (a CROFT_NOW of 2099) is not shown for years


def incident_path(root: str, home: str | Path | None = None) -> str:
    """The incident file of the project at ``root`` (its real path, as the registry keeps it). Named by two
    checksums of the path (zlib's); the file names its root, and one that names another is not this project's."""
    raw = root.encode("utf-8", "surrogateescape")
    name = (zlib.crc32(raw) << 32 | zlib.adler32(raw)).to_bytes(8, "big").hex()  # both, 8 hex digits each
    return f"{home or home_text()}/{FOLDER}/{name}.json"


def read(root: str, home: Path | None = None) -> dict[str, Any] | None:
    """``{root, problem, since, at, told, source}`` of the project's incident, or None (none, or unreadable:
    a broken incident file is a hint lost, rebuilt by the next failing tick)."""
    try:
        with open(incident_path(root, home), encoding="utf-8") as handle:
            value = loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("problem"), dict) or value.get("root") != root:
        return None
    return value


def record(root: str, problem: Problem, now: datetime, source: str, home: Path | None = None) -> bool:
    """Remember ``problem`` as the project's incident; whether it should be told now (a new one, or one
    that could not be recorded and whose hourly reminder is due)."""

    stamp = to_iso(now)
    before = read(root, home)
    same = before is not None and (before.get("problem") or {}).get("code") == problem.code
    entry = {
        "root": root,
        "problem": problem.to_dict(),
        "since": before.get("since", stamp) if same and before else stamp,
        "at": stamp,
        "told": bool(same and before and before.get("told")),
        "source": source,
    }
    tell = not entry["told"]
    entry["told"] = True
    try:
        write_atomic(Path(incident_path(root, home)), entry, indent=None)
    except OSError:
        return now.minute == 0  # no memory to tell once by: remind at most hourly
    return tell


def clear(root: str, source: str | None = None, home: Path | None = None) -> bool:
    """Remove the project's incident (only one ``source`` left, when given); whether there was one. One
    ``stat`` when there is none, which is every healthy minute."""
    path = incident_path(root, home)
    if not os.path.exists(path):
        return False
    if source is not None:
        found = read(root, home)
        if found is not None and found.get("source") != source:
            return False
    try:
        os.unlink(path)
    except OSError:  # gone meanwhile, or a home croft cannot write (doctor shows that link)
        return False
    return True


def clock_shown(incident: dict[str, Any], now: datetime) -> bool:
    """Whether a CLOCK_MOVED_BACK incident is still worth showing at ``now``: until the clock passes its
    latest mark (``details.until``), a day at most. The one rule the tick (which clears it then) and the
    views (``control.troubles``) share."""

    try:
        until = parse_instant(str((incident["problem"].get("details") or {}).get("until")))
        since = parse_instant(str(incident.get("since")))
    except (ValueError, KeyError, AttributeError, TypeError):
        return False
    return now < until and now < since + timedelta(days=CLOCK_SHOWN_DAYS)
