"""``croft tick --all [--json]``: what the OS job runs every minute, once the minute gate handed it on.

``croft.cli.tick``'s click command parses the arguments and calls ``main``.
"""

from __future__ import annotations

import gc
import os
import stat
import sys

from croft.cli.problemtext import problem_lines
from croft.core.envelope import dumps, envelope
from croft.core.problems import exit_code_for
from croft.core.text import for_terminal
from croft.scheduler.user.tick_all import minute

__all__ = ["main"]


def _into_a_file(as_json: bool) -> bool:
    """Whether what this would print goes to a regular file: the OS job appends its output to the tick log
    in CROFT_HOME, and a CROFT_HOME others can write may have that log pointing anywhere (root's job would
    append through the link). A terminal or a pipe (a person, a test) still gets the refusal."""
    try:
        return stat.S_ISREG(os.fstat((sys.stdout if as_json else sys.stderr).fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def main(as_json: bool) -> int:
    """``croft tick --all [--json]``; the exit code (0, or 1 when the tick failed)."""
    data, problems = minute()
    gc.freeze()  # the interpreter's collection at exit would walk the minute's hints once more
    code = exit_code_for(problems)
    if any(p.code == "UNSAFE_PERMISSIONS" for p in problems) and _into_a_file(as_json):
        return code  # the job's output goes to a file in that CROFT_HOME: not a byte more into it
    if as_json:
        sys.stdout.write(dumps(envelope(code == 0, data, [p.to_dict() for p in problems])) + "\n")
    elif problems:
        sys.stderr.write("\n".join(problem_lines(problems)) + "\n")
    elif sys.stdout.isatty():
        notes = "\n".join(data.get("notes", []))
        sys.stdout.write(for_terminal(notes) + ("\n" if notes else ""))
    return code
