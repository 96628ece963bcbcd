"""Handing a free slot on from a project tick: the ticks of the projects a slot is free for start now.

The cap (``scheduler.tick.slots``) names the projects whose groups are first in the order when a tick
saw another project's group ahead of its own with a slot free, or withdrew its own groups. Each named
project gets a real ``croft tick`` in its folder, detached, with a croft child's environment, its output
in the per-user tick log like every tick ``croft tick --all`` starts. (A scheduled run that ends ticks
the next projects itself: ``scheduler.tick.afterrun``.) The started tick decides as every tick does
(holds, the fire recorded before the spawn, the cap's order), so handing on adds a way for a tick to
come, never a way for a run to start.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from croft.core.children import croft_env
from croft.core.clock import to_iso
from croft.scheduler.tick import slots
from croft.scheduler.tick.start import start_project_tick
from croft.scheduler.ticklog import TickLog

__all__ = ["pass_on"]


def pass_on(roots: Sequence[str], now: datetime, why: str) -> list[int]:
    """Start the project tick of each of ``roots``; a line each in the tick log. Never raises: a tick
    that cannot start is a line too, and the next minute's tick comes anyway."""
    if not roots:
        return []
    log = TickLog.of(slots.home())
    stamp = to_iso(now)
    env = croft_env(croft_home=str(slots.home()))
    pids: list[int] = []
    try:
        handle = log.open()
    except OSError:
        return []
    with handle:
        for root in roots:
            try:
                pid = start_project_tick(root, handle, env)
            except OSError as exc:
                log.write(stamp, f"{root}: could not start its tick ({why}): {exc.strerror or exc}")
                continue
            handle.write(f"{stamp} {root}: tick started (pid {pid}): {why}\n".encode())
            pids.append(pid)
    return pids
