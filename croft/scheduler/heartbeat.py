"""Is the scheduler ticking this project: its last heartbeat, and when quiet means stale.

The heartbeat is the ``tick`` row of runs.sqlite, written by every project tick that passes the on-check,
or the idle beat of a minute the per-user tick settled in-process (the project's idle check held, or the
minute gate found nothing moved): one file for the user, ``<CROFT_HOME>/idle-beats.json`` (the minute and
the projects it beat), written once a minute instead of a file per project (a thousand projects made the
minute pay a thousand opens and writes). Nothing else is read as a heartbeat. Scheduling that is on and
quiet for more than 3 minutes (counted from the latest of the last heartbeat, turning on, and the end of a
pause) is stale; ``control.diagnosis`` says why.

A mark more than ``AHEAD_LIMIT`` ahead of the clock (a clock moved backwards, a bad ``CROFT_NOW``) would
make a project look freshly ticked until the clock caught up, so it counts for nothing while a mark
within the limit exists, and on its own it is itself the reason the project is stale ("the clock moved
backwards"): it never hides a scheduler that stopped.
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime, timedelta
from json import dumps, loads
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core import clock
from croft.core.clock import from_iso, to_iso
from croft.core.paths import croft_home
from croft.history.peek import peek
from croft.scheduler.setting import effective_state

if TYPE_CHECKING:
    from croft.scheduler.setting import Scheduling

__all__ = [
    "AHEAD_LIMIT",
    "STALE_AFTER",
    "USER_BEATS",
    "ahead_of",
    "is_stale",
    "last_awake",
    "last_heartbeat",
    "quiet_since",
    "write_user_beats",
]

STALE_AFTER = timedelta(minutes=3)
AHEAD_LIMIT = timedelta(minutes=5)
USER_BEATS = "idle-beats.json"


def last_heartbeat(state_dir: Path, now: datetime | None = None) -> str | None:
    """The later of the tick row's heartbeat (read-only: runs.sqlite is never created here) and the idle
    beat of this user's per-user tick (``write_user_beats``); None when there is none. One far ahead of
    ``now`` (the clock) loses to one that is not (``_latest``)."""

    beats = [b for b in (_row_heartbeat(Path(state_dir)), _user_beat(state_dir)) if b]
    return _latest(beats, now or clock.now())


def last_awake(previous: str | None, state_dir: str | Path, now: datetime) -> str | None:
    """When the scheduler last looked at the project: the latest of its tick row's ``previous`` heartbeat
    and the per-user tick's idle beat (a minute the gate or the idle check settled without a project
    tick), not ahead of ``now``. What the project tick measures a wake-up from: idle minutes are minutes
    the machine was awake."""
    beat = _user_beat(state_dir)
    marks = [m for m in (previous, beat) if m and m <= to_iso(now)]
    return max(marks) if marks else previous


def _latest(marks: list[str], now: datetime) -> str | None:
    """The latest mark not more than ``AHEAD_LIMIT`` ahead of ``now``; the latest of all when none is."""
    limit = to_iso(now + AHEAD_LIMIT)
    sane = [m for m in marks if m <= limit]
    return max(sane or marks) if marks else None


def ahead_of(mark: str | None, now: datetime) -> bool:
    """Whether ``mark`` lies more than ``AHEAD_LIMIT`` ahead of the clock: the clock moved backwards."""
    return mark is not None and mark > to_iso(now + AHEAD_LIMIT)


def write_user_beats(home: str, at: str, roots: list[str]) -> None:
    """The heartbeat at ``at`` of every project in ``roots`` (those the per-user tick beat in-process),
    one file written whole (temp + rename): a reader sees this minute's list or the last one."""
    path = os.path.join(home, USER_BEATS)
    tmp = os.path.join(home, f".{USER_BEATS}.{os.getpid()}.tmp")
    data = dumps({"at": at, "roots": roots}).encode()
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # a stale one, or a link at its name: never written through
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:  # a beat not written reads as a quiet minute; the next one tries again
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _user_beat(state_dir: str | Path) -> str | None:
    """This user's idle beat of the project whose state folder is ``state_dir`` (only ``<root>/.croft``:
    the per-user tick never settles a relocated state folder in-process), or None."""
    folder = os.path.realpath(state_dir)
    if os.path.basename(folder) != ".croft":
        return None
    try:
        with open(os.path.join(croft_home(), USER_BEATS), encoding="utf-8") as handle:
            found = loads(handle.read())
    except (OSError, ValueError):
        return None
    at = found.get("at") if isinstance(found, dict) else None
    roots = found.get("roots") if isinstance(found, dict) else None
    if not isinstance(at, str) or len(at) != 24 or not isinstance(roots, list):
        return None
    return at if os.path.dirname(folder) in roots else None


def _row_heartbeat(state_dir: Path) -> str | None:

    rows = peek(state_dir / "runs.sqlite", "SELECT heartbeat_at FROM tick WHERE id = 1")
    row = rows[0] if rows else None
    value = row[0] if row else None
    if not isinstance(value, str):
        return None
    try:
        return to_iso(from_iso(value))
    except ValueError:
        return None


def quiet_since(setting: Scheduling, heartbeat: str | None, now: datetime) -> str | None:
    """The latest of the heartbeat, turning on, and the end of a pause that has ended."""
    marks = [m for m in (heartbeat, setting.since) if m]
    if setting.state == "paused" and setting.paused_until and setting.paused_until <= to_iso(now):
        marks.append(setting.paused_until)
    return _latest(marks, now)


def is_stale(setting: Scheduling, heartbeat: str | None, now: datetime) -> bool:
    """On, and quiet for more than ``STALE_AFTER``, or quiet since a mark ahead of the clock."""

    if effective_state(setting, now) != "on":
        return False
    quiet = quiet_since(setting, heartbeat, now)
    return quiet is None or ahead_of(quiet, now) or now - from_iso(quiet) > STALE_AFTER
