"""A few full project ticks in the calling process: the per-user tick's minute without a worker.

A fire that finds one project due used to pass through three interpreters in a row: ``croft tick --all``,
a ``croft tick --batch`` worker (``scheduler.user.fulltick``), then the run; starting the worker was a
third of the time from the fire's minute to the row in the warehouse. When only a few projects need the
full tick, ``croft tick --all`` ticks them itself, one after another, by the same ``batch.tick_one`` a
worker uses (its folder, its singleton, every hold rule, the fire recorded before the spawn), and the
run it starts is the second interpreter. Many projects (the first minute after an install, a wake-up)
still go to workers, which tick them side by side and bound a hanging project's time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from croft.core.text import for_terminal
from croft.scheduler.tick.batch import tick_one
from croft.scheduler.tick.report import tick_text

__all__ = ["HERE_AT_MOST", "tick_here"]

HERE_AT_MOST = 2  # projects ticked in-process; more go to workers (scheduler.user.fulltick)


def tick_here(
    roots: list[str], name_of: Callable[[str], str], say: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    """Tick each of ``roots`` here; each tick's lines go to ``say`` under the project's name. Returns
    each root's answer (``{root, exited, ping, error, pid}``, as a worker's). The working folder is put
    back after each."""
    answers: dict[str, dict[str, Any]] = {}
    folder = os.getcwd()
    for root in roots:
        name = name_of(root)
        say(f"{name}: tick started (pid {os.getpid()}, in the per-user tick)")
        try:
            data, problems, answer = tick_one(root, name)
        finally:
            os.chdir(folder)
        lines = [tick_text(data)] if data else []
        lines += [for_terminal(f"{p.severity}: {p.code}: {p.message}") for p in problems]
        for line in "\n".join(lines).splitlines():
            say(f"{name}: {line}")
        answer["pid"] = os.getpid()
        answers[root] = answer
    return answers
