"""The project's scheduling setting (on, off or paused until an instant), kept in runs.sqlite.

runs.sqlite is the project's source of truth for whether the scheduler may start anything: the project
tick, ``croft run --due``, the per-user tick (``croft tick --all``), ``croft serve`` and every status view
read it through ``read_scheduling`` and decide through ``effective_state``, so they can never disagree
about, say, a pause that has just ended. A missing or unreadable value reads as off: the scheduler
never starts work on a guess.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core import disk
from croft.core.clock import from_iso, to_iso
from croft.core.problems import CroftError, problem
from croft.history.db import problem_for_sqlite_error
from croft.history.peek import peek
from croft.history.state import get_setting, put_setting

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any, Literal

    State = Literal["on", "off", "paused"]
    Via = Literal["os-job", "serve"]

__all__ = [
    "SETTING_KEY",
    "Scheduling",
    "effective_state",
    "history_lost",
    "read_scheduling",
    "read_scheduling_file",
    "setting_stored",
    "write_scheduling",
]

SETTING_KEY = "scheduling"

_STATES = ("on", "off", "paused")
_VIAS = ("os-job", "serve")


@dataclass(frozen=True, slots=True)
class Scheduling:
    """``state`` as stored; ``since`` is when it was last turned on or its way of ticking changed."""

    state: State = "off"
    via: Via | None = None
    paused_until: str | None = None
    since: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "via": self.via, "pausedUntil": self.paused_until, "since": self.since}

    @classmethod
    def from_json(cls, value: Any) -> Scheduling:
        """Whatever is stored; anything malformed reads as off."""
        if not isinstance(value, dict) or value.get("state") not in _STATES:
            return cls()
        via = value.get("via") if value.get("via") in _VIAS else None
        until = value.get("pausedUntil")
        since = value.get("since")
        return cls(
            state=value["state"],
            via=via,
            paused_until=until if isinstance(until, str) and _is_instant(until) else None,
            since=since if isinstance(since, str) and _is_instant(since) else None,
        )


def _is_instant(text: str) -> bool:
    try:
        from_iso(text)
    except ValueError:
        return False
    return True


def effective_state(setting: Scheduling, now: datetime) -> State:
    """What the setting means at ``now``: a pause whose end has passed reads as on."""
    if setting.state == "paused" and setting.paused_until is not None and to_iso(now) >= setting.paused_until:
        return "on"
    return setting.state


def read_scheduling(conn: sqlite3.Connection) -> Scheduling:

    return Scheduling.from_json(get_setting(conn, SETTING_KEY))


def read_scheduling_file(state_dir: Path) -> Scheduling:
    """Read the setting without creating or migrating runs.sqlite (per-user tick, status views).

    No file, or an empty one (no table yet), means off; a file that cannot be read (not a database, half
    of one, no permission, a full or read-only disk) is its problem (HISTORY_CORRUPT, PATH_UNWRITABLE,
    DISK_FULL) raised as a CroftError with its fix, never "off": a broken history must not look like a
    project nobody scheduled.
    """
    path = Path(state_dir) / "runs.sqlite"
    try:
        rows = peek(path, "SELECT value FROM settings WHERE key = ?", (SETTING_KEY,), strict=True)
    except (OSError, sqlite3.Error) as exc:
        raise CroftError(_unreadable(exc, path)) from exc
    try:
        return Scheduling.from_json(json.loads(rows[0][0])) if rows else Scheduling()
    except (ValueError, TypeError, RecursionError):
        return Scheduling()


def setting_stored(state_dir: str | Path) -> bool:
    """Whether runs.sqlite holds a scheduling setting at all (on, off or paused), as opposed to none: a
    history emptied, moved aside or made anew. False also when it cannot be read (its own problem)."""
    try:
        rows = peek(Path(state_dir) / "runs.sqlite", "SELECT 1 FROM settings WHERE key = ?", (SETTING_KEY,))
    except (OSError, sqlite3.Error):
        return False
    return bool(rows)


def _unreadable(exc: BaseException, path: Path) -> Any:
    """The problem of a history the setting could not be read from."""
    what = "reading the scheduling setting"
    if isinstance(exc, OSError):
        return disk.os_problem(exc, what, str(path)) or disk.cannot_open(what, str(path), str(exc))

    return problem_for_sqlite_error(exc, what, path)


def write_scheduling(
    conn: sqlite3.Connection,
    state: State,
    now: datetime,
    *,
    via: Via | None = None,
    paused_until: datetime | None = None,
) -> Scheduling:
    """Store the setting; ``since`` moves to ``now`` when scheduling turns on or changes how it ticks."""

    before = read_scheduling(conn)
    since = before.since
    if state == "on" and (before.state != "on" or before.via != via):
        since = to_iso(now)
    elif state == "off":
        since = None
    after = Scheduling(
        state=state,
        via=via if state != "off" else None,
        paused_until=to_iso(paused_until) if state == "paused" and paused_until is not None else None,
        since=since,
    )
    put_setting(conn, SETTING_KEY, after.to_json())
    return after


def history_lost(root: str, via: str) -> Any:
    """HISTORY_LOST: the per-user registry lists ``root`` to tick (by ``via``) while its own history says
    scheduling is off. runs.sqlite was emptied, moved aside or made anew (a 0-byte file, a restore, a
    ``mv``), and the setting and every approval of code went with it: nothing ticks it, and the scheduler
    would hold every asset even if it did. The one wording the per-user tickers (told once) and every view
    (``control.troubles``) use."""

    ticker = "croft serve" if via == "serve" else "the OS job"
    flag = " --no-os-job" if via == "serve" else ""
    command = f"croft schedule on{flag} --project {shlex.quote(root)}"
    history = shlex.quote(f"{root}/.croft/runs.sqlite")
    return problem(
        "HISTORY_LOST",
        f"{root} is in the per-user registry to tick from {ticker}, but its run history says scheduling is"
        " off: runs.sqlite was emptied, moved aside or made anew, so nothing ticks it",
        "The history held the scheduling setting and the approvals of the code a person has run; both"
        f" went with it. If you have the old file (a backup, or a copy moved aside), put it back at {history}"
        " and the next tick resumes with everything it held. Otherwise turn scheduling on again (the fix) and"
        " run each asset once by hand (`croft run`) to approve its code again; `croft schedule off` in the"
        " project takes it off the registry instead.",
        severity="warning",
        fix={"kind": "command", "description": "turn scheduling on again", "command": command},
        details={"cause": "setting_lost", "root": root},
    )
