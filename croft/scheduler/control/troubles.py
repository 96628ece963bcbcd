"""What stops one project's scheduling, as the views see it: the one look ``croft status``, ``croft schedule
status`` and ``croft doctor`` (through ``gather``) share, so none of them calls broken state healthy.

In order of what to fix first:

- croft's home cannot take a write (a full or read-only disk, no permission): the tick log, the slots
  and the incidents live there, so no project ticks well (``home_full`` / ``home_unwritable``);
- its state folder cannot take a write (a full or read-only disk, no permission): DISK_FULL or
  PATH_UNWRITABLE naming the folder (``core.disk``, the check the per-user tick makes);
- its runs.sqlite cannot be read: HISTORY_CORRUPT, PATH_UNWRITABLE or DISK_FULL with the fix
  (``setting.read_scheduling_file`` raises it instead of reading "off");
- its last tick failed (``scheduler.incidents``, recorded by the project tick): SCHEDULER_BROKEN with
  the tick's own problem in ``details.problem``. Incidents the per-user tick recorded are not repeated:
  the first two checks find the same thing now, or find it gone;
- its croft.json cannot be loaded (broken JSON, a value croft refuses): CONFIG_INVALID naming it, cause
  ``config_unreadable``, unless its failing tick already said the same code;
- the clock moved back (a tick found fires, its heartbeat or leases stamped ahead of the clock):
  CLOCK_MOVED_BACK, a warning, while the clock has not caught up (a day at most; ``tick.clockback``);
- the per-user registry and its own setting disagree: registered to tick while its setting says off
  (its history was emptied, moved aside or made anew: no setting at all) is HISTORY_LOST, cause
  ``setting_lost``; a setting written off while the registry kept it is SCHEDULER_BROKEN, same cause. The other direction
  (on, but not registered) is SCHEDULER_STALE's ``not_registered`` once nothing ticks it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core import disk
from croft.core.paths import croft_home
from croft.core.problems import CroftError, Problem, problem
from croft.project.config import load_config
from croft.scheduler import incidents
from croft.scheduler.setting import (
    Scheduling,
    effective_state,
    history_lost,
    read_scheduling_file,
    setting_stored,
)

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Look", "look", "setting_lost"]


@dataclass(frozen=True)
class Look:
    """The setting when it could be read (None otherwise), and what stops the project, first things first."""

    setting: Scheduling | None
    problems: tuple[Problem, ...] = ()

    @property
    def first(self) -> Problem | None:
        return self.problems[0] if self.problems else None


def look(root: str, state_dir: Path, now: datetime, registered_via: str | None) -> Look:
    """The look at one project (``registered_via``: its registry entry's via, None when not registered)."""
    found: list[Problem] = []
    home = croft_home()
    if home.is_dir():
        trouble = disk.folder_problem(home, f"croft's home {home}")
        if trouble is not None:
            found.append(_cause(trouble, "home_full" if trouble.code == "DISK_FULL" else "home_unwritable"))
    folder = state_dir if state_dir.is_dir() else None
    if folder is not None:
        trouble = disk.folder_problem(folder, f"the scheduler's state folder {folder}")
        if trouble is not None:
            found.append(_cause(trouble, _folder_cause(trouble)))
    setting: Scheduling | None = None
    try:
        setting = read_scheduling_file(state_dir)
    except CroftError as exc:
        if not found or found[0].code != exc.code:
            found.append(_cause(exc.problem, "history_unreadable"))
    incident = incidents.read(root)
    if incident is not None and incident.get("source") == "tick":
        found.append(_failing(root, incident))
    if (
        incident is not None
        and incident.get("source") == incidents.CLOCK
        and incidents.clock_shown(incident, now)
    ):
        found.append(Problem.from_dict(incident["problem"]).with_(severity="warning"))
    unreadable = _config_problem(root)
    if unreadable is not None and not any(p.code == unreadable.code for p in found):
        found.append(_cause(unreadable, "config_unreadable"))
    if setting is not None:
        lost = setting_lost(root, setting, now, registered_via, state_dir)
        if lost is not None:
            found.append(lost)
    return Look(setting, tuple(found))


def setting_lost(
    root: str, setting: Scheduling, now: datetime, registered_via: str | None, state_dir: Path | None = None
) -> Problem | None:
    """For a project the registry lists to tick while its own setting says off: HISTORY_LOST when its
    history holds no setting at all (emptied, moved aside, made anew: the approvals went too), else
    SCHEDULER_BROKEN (a setting written off while the registry kept it)."""
    if registered_via is None or effective_state(setting, now) != "off":
        return None
    if state_dir is not None and not setting_stored(state_dir):
        return history_lost(root, registered_via)

    ticker = "croft serve" if registered_via == "serve" else "the OS job"
    flag = " --no-os-job" if registered_via == "serve" else ""
    command = f"croft schedule on{flag} --project {shlex.quote(root)}"
    return problem(
        "SCHEDULER_BROKEN",
        f"{root} is in the per-user registry to tick from {ticker}, but its own setting says scheduling is"
        " off (its run history was replaced or reset), so nothing ticks it",
        "Turn it on again if it should tick (the fix), or `croft schedule off` in it to take it off the"
        " registry.",
        severity="warning",
        fix={"kind": "command", "description": "turn scheduling on again", "command": command},
        details={"cause": "setting_lost", "root": root},
    )


def _config_problem(root: str) -> Problem | None:
    """CONFIG_INVALID (or its like) when the project's croft.json cannot be loaded: every tick of it fails,
    so no view may call it healthy. None when it loads, or is not there (the registry's presence says so)."""

    try:
        load_config(Path(root))
    except CroftError as exc:
        return None if exc.code == "NOT_A_PROJECT" else exc.problem
    return None


def _failing(root: str, incident: dict[str, Any]) -> Problem:
    inner = Problem.from_dict(incident["problem"])
    since, at = incident.get("since"), incident.get("at")
    when = f"since {since}" if since == at else f"since {since} (last at {at})"
    return problem(
        "SCHEDULER_BROKEN",
        f"the scheduler's tick of {root} fails {when}: {inner.code}: {inner.message}",
        inner.hint,
        fix=inner.fix,
        details={"cause": "tick_failing", "root": root, "problem": incident["problem"]},
    )


def _folder_cause(trouble: Problem) -> str:
    return "disk_full" if trouble.code == "DISK_FULL" else "path_unwritable"


def _cause(found: Problem, cause: str) -> Problem:
    return found.with_(details={**(found.details or {}), "cause": cause})
