"""Project ticks one after another in one process: the worker ``croft tick --all`` hands its full ticks to.

A project whose idle memo does not hold needs the full project tick (``scheduler.tick.project_tick``).
One interpreter per such project costs ~130 ms of CPU, most of it starting Python and importing the
tick: the first minute of 1,000 projects (a fresh install, an upgrade, no memo anywhere) would take
longer than the minute on two cores. A worker pays that once and then ticks each project in ~10 ms.
Each project is still ticked by the one function every tick runs, in its own folder, with its own
singleton, holds and fire-recorded-before-spawn; a project that raises is an answer, not the end of
the worker. The dead-man's-switch ping of a completed tick is left to the caller, which sends every
project's ping at once (``notify.ping.ping_many``) instead of one after another here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.problems import CroftError, Problem
from croft.project.config import load_project
from croft.scheduler.tick.project_tick import project_tick

__all__ = ["tick_one"]


def tick_one(root: str) -> tuple[dict[str, Any], list[Problem], dict[str, Any]]:
    """Tick the project at ``root`` now: (the tick's data, its problems, the answer for the caller:
    ``{root, exited, ping, error}``). Never raises for the project's sake."""
    answer: dict[str, Any] = {"root": root, "exited": None, "ping": None, "error": None}
    try:
        os.chdir(root)
        project = load_project(Path(root))
        data, problems = project_tick(project, clock.now(), ping=False)
    except CroftError as exc:
        answer["error"] = f"{exc.problem.code}: {exc.problem.message}"
        return {}, [exc.problem, *exc.extra], answer
    except Exception as exc:  # a bug or a broken project: this project's answer, the next one goes on
        answer["error"] = f"{type(exc).__name__}: {exc}"
        return {}, [], answer
    answer["exited"] = data.get("exited")
    if data.get("exited") is None:  # a completed tick pings; an early exit (off, paused, busy) does not
        answer["ping"] = project.config.notify_ping or None
    return data, problems, answer
