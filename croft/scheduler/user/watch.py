"""The per-user tickers' look at a project before they tick it (``croft tick --all``, ``croft serve``).

Two things would make a project's tick fail that the ticker can see for itself, every minute, for the
price of a system call or a read it makes anyway:

- its state folder cannot take a write: a full disk, a read-only disk, no permission (``core.disk``).
  This is looked at before the idle beat, because a full disk still takes a beat (the beat file's
  block is already there) and the beat would claim health;
- its scheduling setting cannot be read: runs.sqlite is not a database, half of one, or unreadable
  (``setting.read_scheduling_file`` raises for it instead of reading "off").

Two more are what a laptop's life does to a project, and are incidents too, never a quiet skip:

- its folder or croft.json is gone (a ``git checkout`` or ``stash``, a disk not mounted): PROJECT_GONE,
  kept on the schedule and ticked again once it is back; dropped after a long absence, told again then;
- the registry lists it to tick while its history says scheduling is off: runs.sqlite was emptied,
  moved aside or recreated, and the approvals and the setting went with it (HISTORY_LOST).

Each is the project's incident (``scheduler.incidents``): reported in the ticker's envelope, written to
the tick log and told (desktop, webhook) once, and the project is not ticked (its tick would only fail
the same way). The incident goes once the look finds nothing wrong.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core import disk
from croft.core.problems import problem
from croft.scheduler import incidents
from croft.scheduler.setting import history_lost, setting_stored
from croft.scheduler.tick.failure import note_incident
from croft.scheduler.user.registry import GONE_DAYS, MISSING_DAYS, Registry, project_state_dir

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from croft.core.problems import Problem

__all__ = ["absent", "dropped", "folder_trouble", "lost_history", "troubled", "untroubled"]


def folder_trouble(state_dir: str, *, seen: Any = None, disks: Any = None) -> Problem | None:
    """Why the project's state folder cannot take a write now, or None (also when it does not exist yet:
    the project tick makes it, and says so if it cannot). ``seen``: the stat the idle stamp just took of
    it, the owner and mode it had when it last took a write; ``disks``: the minute's answers by device
    (``disk.folder_problem``). Both save the per-user minute three calls per project."""
    if seen is None and not os.path.isdir(state_dir):
        return None
    what = f"the scheduler's state folder {state_dir}"
    return disk.folder_problem(state_dir, what, seen=seen, disks=disks)


def troubled(root: str, found: Problem, now: datetime, source: str) -> bool:
    """Record (and tell, when it is news) what stops ``root`` from ticking; whether it was news."""

    return note_incident(
        Path(root), found.with_(details={**(found.details or {}), "root": root}), now, source
    )


def untroubled(root: str, source: str) -> None:
    """The look found nothing wrong: the incident this ticker recorded, if any, is over (one ``stat``)."""
    incidents.clear(root, source)


def absent(root: str, state: str, why: str, now: datetime, source: str) -> bool:
    """PROJECT_GONE for a registered project whose folder or croft.json is not there (``registry.presence``
    ``gone`` or ``missing``), recorded and told once; whether it was news."""

    days = GONE_DAYS if state == "gone" else MISSING_DAYS
    found = problem(
        "PROJECT_GONE",
        f"{root} is {state} ({why}): it is not ticked while it is away",
        f"It stays on the schedule and ticks again by itself as soon as its croft.json is back (a git checkout"
        f" or stash that took it away: check out or pop it again). Away for {days} days, it is taken off the"
        " schedule, and you are told again then.",
        severity="warning",
        details={"cause": state, "root": root},
    )
    return troubled(root, found, now, source)


def dropped(root: str, now: datetime, source: str) -> None:
    """Tell that ``root`` was taken off the schedule after its long absence (a second notice), and forget
    its incident: it no longer ticks, so nothing is left to show."""

    incidents.clear(root)
    troubled(
        root,
        problem(
            "PROJECT_GONE",
            f"{root} was taken off the schedule: it has been away too long",
            "When the project is back, `croft schedule on` in it puts it on the schedule again.",
            severity="warning",
            details={"cause": "dropped", "root": root},
        ),
        now,
        source,
    )
    incidents.clear(root)


def lost_history(root: str, home: str) -> Problem | None:
    """HISTORY_LOST for ``root`` when its history holds no setting at all and the registry (read again
    now: a ``croft schedule off`` may have just taken it off) still lists it to tick; None otherwise."""

    if setting_stored(project_state_dir(root)):
        return None  # written off (views say the registry disagrees); only a lost history is an incident
    entry = Registry(home).find(root)
    if entry is None:
        return None
    return history_lost(root, entry.via)
