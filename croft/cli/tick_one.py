"""``croft tick`` for one project (``croft.cli.tick`` parses it): the idle answer when the memo holds, else
the project tick, printed as text or the JSON envelope.

The idle answer (``scheduler.tick.memo``) reads a few stats and the memo; the project tick's modules are
loaded only when it does not hold, so a tick with nothing to do costs a tick with nothing to do. The data
says which answered (``path``: ``"idle"`` or ``"full"``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from croft.cli.problemtext import problem_lines
from croft.core import clock, knobs
from croft.core.envelope import dumps, envelope
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.core.text import for_terminal
from croft.project.config import load_project
from croft.scheduler.tick.memo import idle_tick
from croft.scheduler.tick.report import tick_text

__all__ = ["tick"]


def _idle(project_dir: str | None) -> dict[str, Any] | None:
    """The idle tick (croft.scheduler.tick.memo) when it can answer; None means: run the full tick."""
    started = time.perf_counter()
    try:
        if knobs.problems():
            return None
        moment = clock.to_iso(clock.now())
    except Exception:  # a bad knob (CROFT_NOW...): the full path reports it properly
        return None
    data = idle_tick(project_dir or os.getcwd(), moment)
    if data is not None:
        data["tookMs"] = int((time.perf_counter() - started) * 1000)
    return data


def tick(project_dir: str | None, name: str | None, as_json: bool) -> int:
    """Tick one project and print what it did; returns the exit code. Never raises a CroftError."""
    quick = _idle(project_dir)
    if quick is not None:
        print(dumps(envelope(True, quick)) if as_json else for_terminal(tick_text(quick)))
        return 0
    try:
        knobs.require_all()  # the tick hands every knob on to the runs it starts: a bad one stops it here
        from croft.scheduler.tick.failure import tick_failed_to_load
        from croft.scheduler.tick.project_tick import project_tick

        try:
            project = load_project(Path(project_dir) if project_dir else None)
        except CroftError as exc:  # a croft.json that no longer loads stops a project that is on: say so
            tick_failed_to_load(Path(project_dir) if project_dir else None, exc, clock.now())
            raise
        data, problems = project_tick(project, clock.now(), log_name=name)
        result = Result(data=data, problems=problems, ok=True)
    except CroftError as exc:
        result = Result(problems=[exc.problem, *exc.extra])
    if as_json:
        print(dumps(result.envelope()))
    else:
        if result.data:
            print(for_terminal(tick_text(result.data)))
        if result.problems:
            print("\n".join(problem_lines(result.problems)), file=sys.stderr)
    return result.exit_code
