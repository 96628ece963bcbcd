"""Collecting what the scheduler chain is decided from: the registry, the job record's answer and the
backend's health, the interpreter, the tick log, croft serve, the platform, each project's setting and
last tick.

It decides nothing (``chain.links`` does). It costs processes (``crontab -l``, the interpreter, ``/proc``),
so only ``croft doctor`` and a project whose scheduling is stale or never ticked come here; and the job is
looked at only when a project ticks through it.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.project.config import Project
from croft.scheduler import heartbeat
from croft.scheduler.control.chain import Chain, Interpreter, Place
from croft.scheduler.jobs.base import JobState
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.jobs.record import InstalledJob, installed_job
from croft.scheduler.jobs.spec import interpreter_imports_croft
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling_file
from croft.scheduler.ticklog import log_tail, tick_log_path
from croft.scheduler.user.registry import Entry, Registry, canonical, presence, project_state_dir
from croft.scheduler.user.serve import serve_alive
from croft.scheduler.user.trusted import home_unsafe, project_unsafe

__all__ = ["permissions_chain", "project_chain", "user_chain"]


def project_chain(
    project: Project,
    setting: Scheduling,
    now: datetime,
    *,
    runner: Runner | None = None,
    job: InstalledJob | None = None,
) -> Chain:
    """One quiet project's chain, for SCHEDULER_STALE (``job``: the answer the command already read)."""
    registry, entries, error = _registry()
    entry = _find(entries, str(project.root))
    place = _project_place(project, setting, entry, now, quiet=True)
    return _chain([place], registry, len(entries), error, runner, job)


def permissions_chain(project: Project, setting: Scheduling, now: datetime) -> Chain:
    """Only the facts the permission links are decided from (a few ``stat`` calls, no process), for
    ``croft status``: CROFT_HOME's files and this project's parts."""
    place = _project_place(project, setting, None, now, quiet=False)
    return Chain(places=(place,), home_unsafe=home_unsafe(croft_home()))


def user_chain(project: Project | None, now: datetime, *, runner: Runner | None = None) -> Chain:
    """Every registered project's chain, for ``croft doctor``, and the project it runs in when that one is
    not registered (a moved folder, a registry put back from a backup)."""
    registry, entries, error = _registry()
    places = [_entry_place(e, now) for e in entries]
    if project is not None and _find(entries, str(project.root)) is None:
        setting = read_scheduling_file(project.config.state_dir)
        places.insert(0, _project_place(project, setting, None, now, quiet=None))
    return _chain(places, registry, len(entries), error, runner, None)


def _project_place(
    project: Project, setting: Scheduling, entry: Entry | None, now: datetime, *, quiet: bool | None
) -> Place:
    """``quiet`` None: stale or not by the heartbeat's rule; True: the caller knows no tick came."""
    beat = heartbeat.last_heartbeat(project.config.state_dir)
    state = effective_state(setting, now)
    return Place(
        root=str(project.root),
        # a setting without a via is ticked as `croft tick --all` ticks it: by the OS job
        via=setting.via or ("os-job" if state != "off" else None),
        registered_via=entry.via if entry else None,
        state=state,
        quiet=heartbeat.is_stale(setting, beat, now) if quiet is None else quiet,
        last_tick=beat,
        unsafe=project_unsafe(str(project.root), project.config.state_dir),
    )


def _registry() -> tuple[Registry, list[Entry], tuple[str, str | None] | None]:
    registry = Registry()
    try:
        return registry, registry.entries(), None
    except CroftError as exc:
        return registry, [], (exc.problem.message, (exc.problem.fix or {}).get("command"))


def _find(entries: list[Entry], root: str) -> Entry | None:
    key = canonical(root)
    return next((e for e in entries if e.root in (key, root)), None)


def _entry_place(entry: Entry, now: datetime) -> Place:
    state, why = presence(entry.root)
    if state != "present":
        return Place(entry.root, entry.via, entry.via, presence=state, presence_why=why)
    state_dir = project_state_dir(entry.root)
    unsafe = project_unsafe(entry.root, state_dir)
    if unsafe is not None and unsafe.theirs:
        # another user's project: croft reads nothing of it (its setting and heartbeat are hers to say)
        return Place(entry.root, entry.via, entry.via, unsafe=unsafe)
    setting = read_scheduling_file(state_dir)
    beat = heartbeat.last_heartbeat(state_dir)
    return Place(
        root=entry.root,
        via=setting.via or entry.via,
        registered_via=entry.via,
        state=effective_state(setting, now),
        quiet=heartbeat.is_stale(setting, beat, now),
        last_tick=beat,
        unsafe=unsafe,
    )


def _chain(
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
    return Chain(
        places=tuple(places),
        registry=str(registry.path),
        entries=entries,
        registry_error=error,
        home_unsafe=home_unsafe(croft_home()),
        job=state,
        backend_links=health,
        interpreter=interpreter,
        log_file=str(log_file),
        log_dir_exists=log_file.parent.is_dir(),
        log=tuple(log_tail(log_file)),
        serve_alive=serve_alive() if any(p.via == "serve" for p in places) else False,
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
