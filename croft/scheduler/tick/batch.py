"""Project ticks one after another in one process: the worker ``croft tick --all`` hands its full ticks to,
and its end of the pipe (``scheduler.user.fulltick`` holds the other).

A project whose idle memo does not hold needs the full project tick (``scheduler.tick.project_tick``).
One interpreter per such project costs ~130 ms of CPU, most of it starting Python and importing the
tick: the first minute of 1,000 projects (a fresh install, an upgrade, no memo anywhere) would take
longer than the minute on two cores. A worker pays that once and then ticks each project in ~10 ms.
Each project is still ticked by the one function every tick runs, in its own folder, with its own
singleton, holds and fire-recorded-before-spawn; a project that raises is an answer, not the end of
the worker. The dead-man's-switch ping of a completed tick is left to the caller, which sends every
project's ping at once (``notify.ping.ping_many``) instead of one after another here.

The protocol: one line per project on the worker's stdin (``tick.workline``: a project folder and its
name in the tick log, ``ticklog.project_names``), one JSON answer per line on its stdout, in order;
the end of its input ends it. What each tick would print goes to stderr, which is the tick log, as lines
naming the project; the worker's own words (a traceback) name the worker.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.problems import CroftError, Problem
from croft.project.config import load_project
from croft.scheduler.tick.failure import tick_failed_to_load
from croft.scheduler.tick.project_tick import project_tick
from croft.scheduler.tick.workline import asked
from croft.scheduler.ticklog import NamedLines

__all__ = ["tick_one", "work"]


def work(said: Callable[[dict[str, Any], list[Problem]], list[str]]) -> int:
    """The worker's loop over its stdin (``croft tick --batch``); ``said``: a tick's lines for the log
    (the command's own wording). Returns its exit code."""

    def stamp() -> str:
        return clock.to_iso(clock.now())

    sys.stderr.flush()
    err = sys.stderr.fileno()
    sys.stderr = NamedLines(err, f"croft tick --batch (pid {os.getpid()})", stamp)
    for line in sys.stdin:
        found = asked(line)
        if found is None:  # not the per-user tick's: said, and the next line goes on
            sys.stderr.write(f"not a project to tick: {line[:200]!r}\n")
            continue
        root, name = found
        data, problems, answer = tick_one(root, name)
        lines = said(data, problems)
        if lines:
            NamedLines(err, name, stamp).write("\n".join(lines) + "\n")
        try:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        except OSError:  # croft tick --all stopped waiting: finish the input it gave, quietly
            pass
    return 0


def tick_one(root: str, name: str | None = None) -> tuple[dict[str, Any], list[Problem], dict[str, Any]]:
    """Tick the project at ``root`` now: (the tick's data, its problems, the answer for the caller:
    ``{root, exited, ping, error}``). Never raises for the project's sake. ``name``: its name in the
    tick log."""
    answer: dict[str, Any] = {"root": root, "exited": None, "ping": None, "error": None}
    try:
        os.chdir(root)
        try:
            project = load_project(Path(root))
        except CroftError as exc:  # as `croft tick` alone: a project on whose croft.json broke is an incident
            tick_failed_to_load(Path(root), exc, clock.now())
            raise
        data, problems = project_tick(project, clock.now(), ping=False, log_name=name)
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
