"""Is the scheduler ticking this project: its last heartbeat, and when quiet means stale.

The heartbeat is the ``tick`` row of runs.sqlite, written by every project tick that passes the on-check,
or the idle beat of a minute the per-user tick settled in-process (the project's idle check held): one
file for the user, ``<CROFT_HOME>/idle-beats.json`` (the minute and the projects it beat), written once
a minute instead of a file per project (a thousand projects made the minute pay a thousand opens and
writes). ``<state>/tick-beat``, the per-project beat an earlier croft wrote, is still read. Scheduling that
is on and quiet for more than 3 minutes (counted from the latest of the last heartbeat, turning on, and
the end of a pause) is stale; ``control.diagnosis`` says why.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from croft.core.clock import from_iso, to_iso
from croft.core.paths import croft_home
from croft.history.peek import peek
from croft.scheduler.setting import Scheduling, effective_state

__all__ = [
    "BEAT_FILE",
    "STALE_AFTER",
    "USER_BEATS",
    "is_stale",
    "last_heartbeat",
    "quiet_since",
    "read_beat",
    "write_user_beats",
]

STALE_AFTER = timedelta(minutes=3)
BEAT_FILE = "tick-beat"
USER_BEATS = "idle-beats.json"


def last_heartbeat(state_dir: Path) -> str | None:
    """The latest of the tick row's heartbeat (read-only: runs.sqlite is never created here), the idle
    beat of this user's per-user tick (``write_user_beats``) and an earlier croft's ``tick-beat``; None
    when there is none."""
    beats = [b for b in (_row_heartbeat(Path(state_dir)), read_beat(state_dir), _user_beat(state_dir)) if b]
    return max(beats) if beats else None


def write_user_beats(home: str, at: str, roots: list[str]) -> None:
    """The heartbeat at ``at`` of every project in ``roots`` (those the per-user tick beat in-process),
    one file written whole (temp + rename): a reader sees this minute's list or the last one."""
    path = os.path.join(home, USER_BEATS)
    tmp = os.path.join(home, f".{USER_BEATS}.{os.getpid()}.tmp")
    data = json.dumps({"at": at, "roots": roots}).encode()
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
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
            found = json.load(handle)
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
    return max(marks) if marks else None


def is_stale(setting: Scheduling, heartbeat: str | None, now: datetime) -> bool:
    if effective_state(setting, now) != "on":
        return False
    quiet = quiet_since(setting, heartbeat, now)
    return quiet is None or now - from_iso(quiet) > STALE_AFTER


def read_beat(state_dir: str | Path) -> str | None:
    """The instant an earlier croft's per-user tick stored in ``<state>/tick-beat``, or None."""
    try:
        with open(os.path.join(state_dir, BEAT_FILE), encoding="utf-8") as handle:
            text = handle.read(64).strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 24 and text.endswith("Z") else None
