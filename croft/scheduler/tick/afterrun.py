"""The end of a scheduled run: its slots go to the next waiting groups at once, not at the next minute.

A run holds its slots (``scheduler.tick.slotlocks``) until it exits. As it ends it learns which projects
its slots are for (the groups the admission rule starts first: oldest fire, then project folder, then
group, pools permitting) and runs each such project's tick here, in its own process: the one project
tick every tick runs (``scheduler.tick.project_tick``), with that project's singleton, every hold rule,
the fire recorded before the spawn and the cap's own order, so nothing starts that a tick would not
start. The runs those ticks start get this run's slots and begin only once this run has exited, so it
counts until it is gone.
Ticking here rather than starting a ``croft tick`` process saves an interpreter and the tick's imports
per group, most of a backlog's cost at the cap's speed. A tick that finds its project's tick already
running tries again for a moment (that tick is nearly done), then leaves the slot to it; nothing here
ever fails the run whose end it is.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from croft.core.clock import now as clock_now
from croft.core.clock import to_iso
from croft.project.config import load_project
from croft.scheduler.tick import slots
from croft.scheduler.tick.project_tick import project_tick
from croft.scheduler.tick.slotlocks import Lock
from croft.scheduler.ticklog import TickLog

__all__ = ["BUSY_TRIES", "after_run"]

BUSY_TRIES = 10  # 100 ms apart: a project tick takes tens of milliseconds


def after_run(run_id: str, held: tuple[Lock, ...]) -> None:
    """Hand this run's slots (``held``) on: tick the projects they are now for. Never raises."""
    log = TickLog.of(slots.home())
    spare = list(held)
    try:
        roots = slots.hand_over(slots.home(), held, clock_now())
    except Exception as exc:  # the run's result stands; the next minute's tick fills the slot
        _say(log, f"{os.getcwd()}: run {run_id} could not hand its slot on: {type(exc).__name__}: {exc}")
        return
    for root in roots:
        _tick(log, root, run_id, spare)


def _tick(log: TickLog, root: str, run_id: str, spare: list[Lock]) -> None:
    try:
        project = load_project(Path(root))
        for _ in range(BUSY_TRIES):
            data, _problems = project_tick(project, clock_now(), spare=spare)
            if data.get("exited") != "busy":
                break
            time.sleep(0.1)
    except Exception as exc:  # that project's own tick comes at the next minute
        _say(log, f"{root}: tick in run {run_id} failed: {type(exc).__name__}: {exc}")
        return
    started = ", ".join(s["runId"] for s in data.get("spawned", [])) or "nothing"
    why = f"exited {data['exited']}" if data.get("exited") else f"started {started}"
    _say(log, f"{root}: ticked by run {run_id} (pid {os.getpid()}), whose slot came free: {why}")


def _say(log: TickLog, message: str) -> None:
    with contextlib.suppress(OSError):
        log.write(to_iso(clock_now()), message)
