"""A project tick that failed, never a quiet one: the incident it leaves (``scheduler.incidents``), told
once, and cleared by the next tick that succeeds.

The tick writes its heartbeat before it decides anything, so a tick that fails afterwards (a slots file
it cannot rebuild, a full disk, a bug) would otherwise leave a heartbeat that claims health every
minute. Only a tick that found scheduling on records one: an off or paused project has nothing to
fail. A project whose croft.json no longer loads counts when its own setting still says on.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from croft.core import disk
from croft.core.paths import project_state_dir
from croft.core.problems import CroftError, Problem, problem
from croft.notify.send import notify_scheduler_problem
from croft.project.config import Config, Project, load_project
from croft.scheduler import incidents
from croft.scheduler.setting import effective_state, read_scheduling_file

__all__ = ["failed_problem", "note_incident", "tick_failed", "tick_failed_to_load", "tick_succeeded"]


def failed_problem(exc: BaseException) -> Problem:
    """The problem an incident records for what a tick raised: its own, a full or read-only disk's, or
    INTERNAL_ERROR naming the exception (whose traceback the boundary writes to a crash file)."""
    if isinstance(exc, CroftError):
        return exc.problem
    machine = disk.os_problem(exc, "the scheduler's tick")
    if machine is not None:
        return machine
    return problem(
        "INTERNAL_ERROR",
        f"the scheduler's tick failed: {type(exc).__name__}: {str(exc)[:200]}",
        "This is a bug in croft: `croft tick` in the project shows it with the crash file that holds the"
        " traceback; please report it with that file.",
        details={"exception": type(exc).__name__},
    )


def note_incident(
    root: Path, found: Problem, now: datetime, source: str, project: Project | None = None
) -> bool:
    """Record ``found`` as the project's incident and tell it when it is news (desktop and webhook, by the
    project's croft.json, or its defaults when croft.json does not load); whether it was news. Never raises:
    the caller goes on to report the problem itself."""
    try:
        news = incidents.record(str(root), found, now, source)
        if news:
            notify_scheduler_problem(project or _project_for_telling(root), found)
        return news
    except Exception:  # its memory and its message are a best effort; the problem is reported anyway
        return False


def tick_failed(project: Project, exc: BaseException, now: datetime) -> None:
    """The incident of a tick that failed with scheduling on."""
    note_incident(project.root, failed_problem(exc), now, "tick", project)


def tick_failed_to_load(start: Path | None, exc: CroftError, now: datetime) -> None:
    """``croft tick`` in a project whose croft.json no longer loads: an incident only when the project's
    own setting still says on (it should be ticking). Never raises."""
    try:
        root = _root_of(start)
        if root is None:
            return
        if effective_state(read_scheduling_file(project_state_dir(root)), now) != "on":
            return
        note_incident(root, exc.problem, now, "tick")
    except Exception:
        pass


def _project_for_telling(root: Path) -> Project:
    """The project, to tell by its croft.json's notify settings; when croft.json does not load, the
    defaults it would have (desktop on, no webhook), with its .env still redacted."""

    try:
        return load_project(root)
    except CroftError:
        state = project_state_dir(root)
        return Project(
            root=root, config=Config(timezone="UTC", database=root / "warehouse.sqlite", state_dir=state)
        )


def tick_succeeded(project: Project) -> None:
    """The tick did its work: whatever stopped it before has gone (one ``stat`` when nothing had). A clock
    that moved back is not something a tick fails at: that notice stays until the clock has caught up
    (``tick.clockback``)."""
    root = str(project.root)
    if not os.path.exists(incidents.incident_path(root)):
        return
    found = incidents.read(root)
    if found is None or found.get("source") != incidents.CLOCK:
        incidents.clear(root)


def _root_of(start: Path | None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "croft.json").is_file():
            return folder
    return None
