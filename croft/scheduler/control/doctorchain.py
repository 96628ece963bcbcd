"""``croft doctor``'s chain: every registered project, the project it runs in when that one is not
registered, the projects croft remembers ticking that the registry lost, and each one's notifications.

Apart from ``control.gather`` (one project's chain, which ``croft status`` asks for when its scheduling is
stale), so a status loads neither the desktop's reachability nor notify.log's reader.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime
from typing import Any

from croft.core.problems import CroftError
from croft.project.config import Project
from croft.scheduler import heartbeat
from croft.scheduler.control.chain import Chain, Place
from croft.scheduler.control.gather import (
    ahead_since,
    build_chain,
    find_entry,
    project_place,
    readable_setting,
    registry_entries,
)
from croft.scheduler.control.notifying import gather_notifying
from croft.scheduler.control.troubles import look
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.setting import Scheduling, effective_state
from croft.scheduler.user.registry import Entry, Registry, presence, project_state_dir
from croft.scheduler.user.trusted import project_unsafe
from croft.scheduler.user.wakefile import read_state

__all__ = ["user_chain"]


def user_chain(project: Project | None, now: datetime, *, runner: Runner | None = None) -> Chain:
    """Every registered project's chain, for ``croft doctor``; the project it runs in when that one is not
    registered (a moved folder, a registry put back from a backup); and every project croft remembers
    ticking (the registry's last good copy, the per-user tick's caches) whose own setting says on while
    the registry has lost it: both directions of the registry are checked."""
    registry, entries, error = registry_entries()
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
    if project is not None and find_entry(entries, str(project.root)) is None:
        setting = readable_setting(project.config.state_dir)
        places.insert(0, project_place(project, setting, None, now, quiet=None))
        listed.add(str(project.root))
    if error is None:
        for root in _remembered(registry):
            if root not in listed:
                lost = _lost_place(root, now)
                if lost is not None:
                    places.append(lost)
                    listed.add(root)
    return build_chain(_with_notifying(places), registry, len(entries), error, runner, None)


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
        ahead=ahead_since(setting, beat, now),
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
        ahead=ahead_since(seen.setting, beat, now),
        troubles=seen.problems,
        unsafe=unsafe,
    )
