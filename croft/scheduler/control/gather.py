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
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from croft.core.disk import folder_problem
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.project.config import Project
from croft.scheduler import heartbeat
from croft.scheduler.control.chain import Chain, Interpreter, Place
from croft.scheduler.control.notifying import gather_notifying
from croft.scheduler.control.troubles import look
from croft.scheduler.jobs.base import JobState
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.jobs.record import InstalledJob, installed_job
from croft.scheduler.jobs.spec import interpreter_imports_croft
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling_file
from croft.scheduler.ticklog import log_tail, tick_log_path
from croft.scheduler.user.registry import Entry, Registry, canonical, presence, project_state_dir
from croft.scheduler.user.servenote import serve_alive
from croft.scheduler.user.trusted import home_unsafe, project_unsafe
from croft.scheduler.user.wakefile import read_state

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
    """Every registered project's chain, for ``croft doctor``; the project it runs in when that one is not
    registered (a moved folder, a registry put back from a backup); and every project croft remembers
    ticking (the registry's last good copy, the per-user tick's caches) whose own setting says on while
    the registry has lost it: both directions of the registry are checked."""
    registry, entries, error = _registry()
    if error is None:
        try:
            if registry.refresh_backup():
                registry.notes.append(
                    f"its last good copy {registry.backup_path.name} was missing or out of date; wrote it again"
                )
        except (OSError, CroftError) as exc:
            registry.notes.append(
                f"its last good copy {registry.backup_path.name} could not be written: {exc}"
            )
    places = [_entry_place(e, now) for e in entries]
    listed = {p.root for p in places}
    if project is not None and _find(entries, str(project.root)) is None:
        setting = _readable(project.config.state_dir)
        places.insert(0, _project_place(project, setting, None, now, quiet=None))
        listed.add(str(project.root))
    if error is None:
        for root in _remembered(registry):
            if root not in listed:
                lost = _lost_place(root, now)
                if lost is not None:
                    places.append(lost)
                    listed.add(root)
    return _chain(_with_notifying(places), registry, len(entries), error, runner, None)


def _with_notifying(places: list[Place]) -> list[Place]:
    """Doctor's places with their notification facts: each present project croft may read (the desktop
    is asked once per way of ticking, for all of them)."""
    seen: dict[bool, Any] = {}
    out = []
    for place in places:
        if place.presence == "present" and (place.unsafe is None or not place.unsafe.theirs):
            place = replace(place, notifying=gather_notifying(place.root, place.via, seen))
        out.append(place)
    return out


def _project_place(
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
        ahead=_ahead(setting, beat, now),
        troubles=seen.problems,
        unsafe=project_unsafe(str(project.root), project.config.state_dir),
    )


def _readable(state_dir: Path) -> Scheduling | None:
    try:
        return read_scheduling_file(state_dir)
    except CroftError:
        return None  # the look says why


def _ahead(setting: Scheduling, beat: str | None, now: datetime) -> str | None:
    quiet = heartbeat.quiet_since(setting, beat, now)
    return quiet if heartbeat.ahead_of(quiet, now) else None


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
    seen = look(entry.root, state_dir, now, entry.via)
    setting = seen.setting or Scheduling(state="on", via=entry.via)  # unreadable: as the registry says
    beat = heartbeat.last_heartbeat(state_dir, now)
    return Place(
        root=entry.root,
        via=setting.via or entry.via,
        registered_via=entry.via,
        state=effective_state(setting, now),
        quiet=heartbeat.is_stale(setting, beat, now),
        last_tick=beat,
        ahead=_ahead(setting, beat, now),
        troubles=seen.problems,
        unsafe=unsafe,
    )


def _remembered(registry: Registry) -> list[str]:
    """Projects croft has ticked that the registry may have lost: its last good copy, and the roots the
    per-user tick remembers in the wake file (``user.wakestate``, by root)."""
    found = [e.root for e in registry.backup() or []]
    found += [key for key in read_state(str(registry.home)) if isinstance(key, str) and os.path.isabs(key)]
    return list(dict.fromkeys(found))


def _lost_place(root: str, now: datetime) -> Place | None:
    """A remembered project the registry does not list, when its own setting says it should tick."""
    if presence(root)[0] != "present":
        return None
    state_dir = project_state_dir(root)
    unsafe = project_unsafe(root, state_dir)
    if unsafe is not None and unsafe.theirs:
        return None  # another user's: not croft's to read
    seen = look(root, state_dir, now, None)
    if seen.setting is None or effective_state(seen.setting, now) == "off":
        return None
    beat = heartbeat.last_heartbeat(state_dir, now)
    return Place(
        root=root,
        via=seen.setting.via or "os-job",
        registered_via=None,
        state=effective_state(seen.setting, now),
        quiet=heartbeat.is_stale(seen.setting, beat, now),
        last_tick=beat,
        ahead=_ahead(seen.setting, beat, now),
        troubles=seen.problems,
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
