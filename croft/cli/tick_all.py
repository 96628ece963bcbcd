"""``croft tick --all [--json]``: what the OS job runs every minute, once the minute gate handed it on.

``croft.cli.tick``'s click command parses the arguments and calls ``main``.
"""

from __future__ import annotations

import gc
import os
import sys

from croft.core import clock, knobs
from croft.core.paths import home_text
from croft.core.problems import CroftError, Problem, exit_code_for, problem
from croft.scheduler.ticklog import TickLog
from croft.scheduler.user.tick_all import tick_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]


def _into_a_file(as_json: bool) -> bool:
    """Whether what this would print goes to a regular file: the OS job appends its output to the tick log
    in CROFT_HOME, and a CROFT_HOME others can write may have that log pointing anywhere (root's job would
    append through the link). A terminal or a pipe (a person, a test) still gets the refusal."""
    import stat

    try:
        return stat.S_ISREG(os.fstat((sys.stdout if as_json else sys.stderr).fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def main(as_json: bool) -> int:
    """``croft tick --all [--json]``; the exit code (0, or 1 when the tick failed)."""
    problems: list[Problem] = []
    data: dict[str, Any] = {}
    code = 0
    try:
        knobs.require_all()  # the knobs go on to every tick and run it starts: a bad one stops it here
        data = tick_all()
        gc.freeze()  # the interpreter's collection at exit would walk the minute's hints once more
        problems += data.pop("problems", [])
        code = exit_code_for(problems)
    except CroftError as exc:
        problems += [exc.problem, *exc.extra]
        code = exit_code_for(problems) or 1
    except Exception as exc:  # the job must log and end, never hang or lose the reason
        import traceback

        TickLog.of(home_text()).write(
            clock.to_iso(clock.now()), "tick failed: " + "".join(traceback.format_exception(exc)).rstrip()
        )
        message = f"croft tick --all failed: {type(exc).__name__}: {exc}"
        problems.append(
            problem("INTERNAL_ERROR", message, "The traceback is in the tick log; please report it.")
        )
        code = 1
    if any(p.code == "UNSAFE_PERMISSIONS" for p in problems) and _into_a_file(as_json):
        return code  # the job's output goes to a file in that CROFT_HOME: not a byte more into it
    if as_json:  # the OS job asks for none: the envelope's code loads only for a person
        from croft.core.envelope import dumps, envelope

        sys.stdout.write(dumps(envelope(code == 0, data, [p.to_dict() for p in problems])) + "\n")
    elif problems:
        from croft.cli.boundary import problem_lines

        sys.stderr.write("\n".join(problem_lines(problems)) + "\n")
    elif sys.stdout.isatty():
        from croft.core.text import for_terminal

        notes = "\n".join(data.get("notes", []))
        sys.stdout.write(for_terminal(notes) + ("\n" if notes else ""))
    return code
