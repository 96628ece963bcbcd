"""Collecting what the scheduler chain is decided from: the registry, the job record's answer and the
backend's health, the interpreter, the tick log, croft serve, the platform, each project's setting and
last tick.

It decides nothing (``chain.links`` does). It costs processes (``crontab -l``, the interpreter, ``/proc``),
so only ``croft doctor`` and a project whose scheduling is stale or never ticked come here; and the job is
looked at only when a project ticks through it. Doctor's whole chain (every registered project, the ones the
registry lost, their notifications) is ``control.doctorchain``'s, over the functions here.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

from croft.core.disk import folder_problem
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.project.config import Project
from croft.scheduler import heartbeat
from croft.scheduler.control.chain import Chain, Interpreter, Place
from croft.scheduler.control.troubles import look
from croft.scheduler.jobs.base import JobState
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.jobs.record import InstalledJob, installed_job
from croft.scheduler.jobs.spec import interpreter_imports_croft
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling_file
from croft.scheduler.ticklog import log_tail, tick_log_path
from croft.scheduler.user.registry import Entry, Registry, canonical
from croft.scheduler.user.servenote import serve_alive
from croft.scheduler.user.trusted import home_unsafe, project_unsafe

__all__ = [
    "ahead_since",
    "build_chain",
    "find_entry",
    "permissions_chain",
    "project_chain",
    "project_place",
    "readable_setting",
    "registry_entries",
]


def project_chain(
    project: Project,
    setting: Scheduling,
    now: datetime,
    *,
    runner: Runner | None = None,
    job: InstalledJob | None = None,
) -> Chain:
    """One quiet project's chain, for SCHEDULER_STALE (``job``: the answer the command already read)."""
    registry, entries, error = registry_entries()
    entry = find_entry(entries, str(project.root))
    place = project_place(project, setting, entry, now, quiet=True)
    return build_chain([place], registry, len(entries), error, runner, job)


def permissions_chain(project: Project, setting: Scheduling, now: datetime) -> Chain:
    """Only the facts the permission links are decided from (a few ``stat`` calls, no process), for
    ``croft status``: CROFT_HOME's files and this project's parts."""
    place = project_place(project, setting, None, now, quiet=False)
    return Chain(places=(place,), home_unsafe=home_unsafe(croft_home()))


def project_place(
    project: Project, setting: Scheduling | None, entry: Entry | None, now: datetime, *, quiet: bool | None
) -> Place:
    """``quiet`` None: stale or not by the heartbeat's rule; True: the caller knows no tick came."""
    seen = look(str(project.root), project.config.state_dir, now, entry.via if entry else None)
    setting = seen.setting or setting or Scheduling()
    beat = heartbeat.last_heartbeat(project.config.state_dir, now)
    state = effective_state(setting, now)
    return Place(
        root=str(project.root),
        # a setting without a via is ticked as `croft tick --all` ticks it: by the OS job
        via=setting.via or ("os-job" if state != "off" else None),
        registered_via=entry.via if entry else None,
        state=state,
        quiet=heartbeat.is_stale(setting, beat, now) if quiet is None else quiet,
        last_tick=beat,
        ahead=ahead_since(setting, beat, now),
        troubles=seen.problems,
        unsafe=project_unsafe(str(project.root), project.config.state_dir),
    )


def readable_setting(state_dir: Path) -> Scheduling | None:
    try:
        return read_scheduling_file(state_dir)
    except CroftError:
        return None  # the look says why


def ahead_since(setting: Scheduling, beat: str | None, now: datetime) -> str | None:
    quiet = heartbeat.quiet_since(setting, beat, now)
    return quiet if heartbeat.ahead_of(quiet, now) else None


def registry_entries() -> tuple[Registry, list[Entry], tuple[str, str | None] | None]:
    registry = Registry()
    try:
        return registry, registry.entries(), None
    except CroftError as exc:
        return registry, [], (exc.problem.message, (exc.problem.fix or {}).get("command"))


def find_entry(entries: list[Entry], root: str) -> Entry | None:
    key = canonical(root)
    return next((e for e in entries if e.root in (key, root)), None)


def build_chain(
    places: list[Place],
    registry: Registry,
    entries: int,
    error: tuple[str, str | None] | None,
    runner: Runner | None,
    job: InstalledJob | None,
) -> Chain:
    log_file = tick_log_path(croft_home())
    state: JobState | None = None
    health: tuple[Link, ...] = ()
    interpreter: Interpreter | None = None
    if any(p.via == "os-job" for p in places):
        job = job if job is not None else installed_job(runner)
        state = job.state
        health = tuple(job.health())
        if state is not None and state.installed:
            interpreter = _interpreter(state.python)
    home = croft_home()
    return Chain(
        places=tuple(places),
        registry=str(registry.path),
        entries=entries,
        registry_error=error,
        registry_notes=tuple(registry.notes),
        home_unsafe=home_unsafe(croft_home()),
        home=str(home),
        home_trouble=folder_problem(home, f"croft's home {home}") if home.is_dir() else None,
        job_note=job.note if job is not None else None,
        job=state,
        backend_links=health,
        interpreter=interpreter,
        log_file=str(log_file),
        log_dir_exists=log_file.parent.is_dir(),
        log=tuple(log_tail(log_file)),
        serve_alive=serve_alive() if places else False,  # serve ticks the OS job's projects too
        platform=sys.platform,
        wsl=_wsl(),
    )


def _interpreter(python: str | None) -> Interpreter:
    if python is None:
        return Interpreter(None)
    if not os.access(python, os.X_OK):
        return Interpreter(python, found=False, imports=False)
    imports, said = interpreter_imports_croft(python)
    return Interpreter(python, found=True, imports=imports, said=said)


def _wsl() -> bool:
    try:
        return "microsoft" in Path("/proc/version").read_text().lower()
    except OSError:
        return False
