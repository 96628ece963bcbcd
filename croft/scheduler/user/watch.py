"""The per-user tickers' look at a project before they tick it (``croft tick --all``, ``croft serve``).

Two things would make a project's tick fail that the ticker can see for itself, every minute, for the
price of a system call or a read it makes anyway:

- its state folder cannot take a write: a full disk, a read-only disk, no permission (``core.disk``).
  This is looked at before the idle beat, because a full disk still takes a beat (the beat file's
  block is already there) and the beat would claim health;
- its scheduling setting cannot be read: runs.sqlite is not a database, half of one, or unreadable
  (``setting.read_scheduling_file`` raises for it instead of reading "off").

Either is the project's incident (``scheduler.incidents``): reported in the ticker's envelope, written to
the tick log and told (desktop, webhook) once, and the project is not ticked (its tick would only fail
the same way). The incident goes once the look finds nothing wrong.
"""

from __future__ import annotations

import os

from croft.core import disk
from croft.scheduler import incidents

TYPE_CHECKING = False  # the per-user tick runs this every minute
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from croft.core.problems import Problem

__all__ = ["folder_trouble", "troubled", "untroubled"]


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
    from pathlib import Path  # lazy: only a troubled project pays for the telling

    from croft.scheduler.tick.failure import note_incident

    return note_incident(
        Path(root), found.with_(details={**(found.details or {}), "root": root}), now, source
    )


def untroubled(root: str, source: str) -> None:
    """The look found nothing wrong: the incident this ticker recorded, if any, is over (one ``stat``)."""
    incidents.clear(root, source)
