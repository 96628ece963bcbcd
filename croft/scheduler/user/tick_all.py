"""``croft tick --all``: what the OS job runs every minute, for every project of this user.

It reads the registry, prunes it, and starts the project tick of each ``os-job`` project whose
scheduling is on, each in its own detached process, so one broken project never stops the others. A
project whose idle memo still holds (nothing changed, nothing can be due) only needs its heartbeat, so
that is written here, in-process, by the project tick's own idle check instead of a new interpreter.
It runs 1,440 times a day, so it imports nothing it does not need (no click, no httpx, no asset code;
the CLI dispatches here before loading click) and does no work for a project whose scheduling is off.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.children import croft_env
from croft.core.disk import folder_problem
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.scheduler.heartbeat import write_beat
from croft.scheduler.setting import effective_state
from croft.scheduler.ticklog import TickLog, project_names
from croft.scheduler.user.idlecache import IdleCache
from croft.scheduler.user.launch import spawn_tick
from croft.scheduler.user.registry import Entry, Registry, presence, project_state_dir
from croft.scheduler.user.settingcache import SettingCache
from croft.scheduler.user.trusted import home_unsafe, project_unsafe, state_dir_unsafe, unsafe_error, words
from croft.scheduler.user.watch import folder_trouble, troubled, untroubled

__all__ = ["tick_all"]

PRUNE_LOCK_S = 2.0
SOURCE = "tick-all"  # whose incidents these are (scheduler.incidents)


def tick_all(home: Path | None = None) -> dict[str, Any]:
    """One minute's work; returns what it did. Raises CroftError for an unreadable registry, and
    UNSAFE_PERMISSIONS, having written nothing, when CROFT_HOME or one of its files is not this user's
    alone (``user.trusted``); ``croft status`` and ``croft doctor`` show why."""
    home = home or croft_home()
    unsafe = home_unsafe(home)
    if unsafe is not None:
        raise unsafe_error(unsafe)
    now = clock.now()
    stamp = clock.to_iso(now)
    log = TickLog.of(home)
    log.rotate()
    registry = Registry(home)
    out: dict[str, Any] = {
        "at": stamp,
        "started": [],
        "beat": [],
        "skipped": [],
        "notes": [],
        "problems": [],  # Problem objects: what stops a project from ticking (the CLI puts them in the envelope)
    }

    def note(message: str) -> None:
        out["notes"].append(message)
        log.write(stamp, message)

    home_trouble = folder_problem(home, f"croft's home {home}") if home.is_dir() else None
    if home_trouble is not None:  # the tick log, the slots and the incidents live there: say so, go on
        out["problems"].append(home_trouble)

    try:
        entries = registry.entries()
    except CroftError as exc:
        note(f"tick failed: {exc.problem.message}; {exc.problem.hint}")
        raise
    for message in registry.notes:  # a registry restored from its last good copy
        note(message)
    if not entries:
        return out
    try:
        pruned = registry.prune(now, lock_timeout=PRUNE_LOCK_S)
        for message in pruned:
            note(message)
        if pruned:  # every change prunes with a note: no note, the entries read above stand
            entries = registry.entries()
    except CroftError as exc:
        if exc.code != "DB_BUSY":
            raise
        note(f"{registry.path} is locked by another croft; pruning next minute")
    env = croft_env(croft_home=str(home))
    cache = SettingCache(home / "tick-cache.json")
    idle = IdleCache(home / "idle-cache.json")
    names = project_names(e.root for e in entries)  # each line about a project names it (short)
    with log.open() as handle:
        for entry in entries:
            name = names[entry.root]
            try:
                _one(
                    entry, now, cache, idle, handle, env, out, lambda said, n=name: note(f"{n}: {said}"), name
                )
            except Exception as exc:  # one broken project never stops the others
                note(f"{name}: tick not started: {type(exc).__name__}: {exc}")
                out["skipped"].append({"root": entry.root, "reason": f"error: {exc}"})
    cache.save()
    idle.save()
    return out


def _one(
    entry: Entry,
    now: Any,
    cache: SettingCache,
    idle: IdleCache,
    handle: Any,
    env: dict[str, str],
    out: dict[str, Any],
    say: Any,
    name: str,
) -> None:
    """One project's minute; ``say`` writes a tick log line about it (its name in front)."""
    stamp = out["at"]
    if entry.via != "os-job":
        out["skipped"].append({"root": entry.root, "reason": "ticks from croft serve"})
        return
    unsafe = project_unsafe(entry.root)  # trusted first: even a heartbeat is a write into its folder
    # then able to take a write: before the idle beat, which a full disk still takes
    trouble = folder_trouble(f"{entry.root}/.croft") if unsafe is None else None
    if unsafe is None and trouble is None and idle.still(entry.root, stamp):  # see _beat; no incident there
        return _beat(entry, stamp, out)
    state_dir = project_state_dir(entry.root)
    if unsafe is None:
        unsafe = state_dir_unsafe(entry.root, state_dir)  # a relocated state folder
    if unsafe is not None:
        say(f"not ticked, croft does not trust {words(unsafe)}")
        out["skipped"].append({"root": entry.root, "reason": "unsafe permissions", "path": unsafe.path})
        return None
    reason = None
    if trouble is None:
        try:
            reason = _skip_reason(entry, now, cache, state_dir)
        except CroftError as exc:  # its runs.sqlite cannot be read: not "off", a problem with its fix
            trouble = exc.problem
    if trouble is not None:
        said = f"{trouble.code}: {trouble.message}"
        out["skipped"].append({"root": entry.root, "reason": said})
        out["problems"].append(trouble.with_(details={**(trouble.details or {}), "root": entry.root}))
        if troubled(entry.root, trouble, now, SOURCE):  # logged and told once per incident
            say(f"not ticked: {said}")
        return
    if reason:
        out["skipped"].append({"root": entry.root, "reason": reason})
        if reason.startswith("cannot check"):
            say(reason)
        return
    untroubled(entry.root, SOURCE)
    if idle.check(entry.root, stamp):
        return _beat(entry, stamp, out)
    try:
        child = spawn_tick(entry.root, handle, env, name)
    except OSError as exc:
        say(f"could not start its tick: {exc.strerror or exc}")
        out["skipped"].append({"root": entry.root, "reason": "could not start"})
        return
    _forget(child)
    say(f"tick started (pid {child.pid})")
    out["started"].append({"root": entry.root, "pid": child.pid})


def _beat(entry: Entry, stamp: str, out: dict[str, Any]) -> None:
    """A project whose idle check holds (``scheduler.user.idlecache``: the project tick's own rule, remembered
    by the stat of what it read) only needs its heartbeat: written here, and no interpreter is started.
    While nothing moved, its croft.json, runs.sqlite (setting included) and asset files are as they were
    when it was on and present, so it still is."""
    write_beat(os.path.join(entry.root, ".croft"), stamp)
    out["beat"].append({"root": entry.root, "heartbeatAt": stamp})


def _forget(child: Any) -> None:
    """This process never waits for the ticks it starts (it exits in a moment and init reaps them);
    saying so to Popen keeps it from warning about a child nobody was meant to wait for."""
    child.returncode = 0


def _skip_reason(entry: Entry, now: Any, cache: SettingCache, state_dir: Path) -> str | None:
    """Why a present-or-not os-job project is not ticked this minute, or None; CroftError (with its fix)
    when its state folder (a relocated one) cannot take a write or its setting cannot be read."""
    state, why = presence(entry.root)
    if state != "present":
        return why if state == "unknown" else f"{state}: {why}"
    if str(state_dir) != f"{entry.root}/.croft":
        trouble = folder_trouble(str(state_dir))
        if trouble is not None:
            raise CroftError(trouble)
    setting = cache.read(state_dir)
    if setting.via == "serve":
        return "ticks from croft serve"
    current = effective_state(setting, now)
    return None if current == "on" else f"scheduling is {current}"
