"""Handing a free slot on at once: the project ticks a freed slot belongs to are started now, not at the
next minute.

The cap (``scheduler.tick.slots``) names the projects whose groups are first in the order when a slot
comes free: a scheduled run that ends (``after_run``, from ``croft run --due``), a tick that saw
another project's group ahead of its own, a tick that withdrew its groups. Each named project gets a
real ``croft tick`` in its folder, detached, with a croft child's environment, its output in the
per-user tick log like every tick ``croft tick --all`` starts. The started tick decides as every tick
does (holds, the fire recorded before the spawn, the cap's order), so handing on adds a way for a tick
to come, never a way for a run to start.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from datetime import datetime

from croft.core.children import croft_env
from croft.core.clock import now as clock_now
from croft.core.clock import to_iso
from croft.core.identity import current
from croft.scheduler.tick import slots
from croft.scheduler.tick.start import start_project_tick
from croft.scheduler.ticklog import TickLog

__all__ = ["after_run", "pass_on"]


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


def after_run(run_id: str) -> None:
    """The end of a scheduled run: give its slot back and start the ticks the freed slot is for. A run
    that held no slot (a run by hand) does nothing; nothing here fails the run."""
    try:
        moment = clock_now()
        roots = slots.hand_over(slots.home(), current(), moment)
        pass_on(roots, moment, f"run {run_id} ended and handed its slot on")
    except Exception as exc:  # the run's result stands; the next minute's tick fills the slot
        with contextlib.suppress(Exception):
            TickLog.of(slots.home()).write(
                to_iso(clock_now()), f"{os.getcwd()}: run {run_id} could not hand its slot on: {exc}"
            )
