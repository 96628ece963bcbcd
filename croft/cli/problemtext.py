"""The human form of problems: the lines every command prints for them on stderr.

Its own module, apart from the crash boundary (``cli.boundary``), because every command prints problems
while only a crash writes a crash file. It imports no click: ``tick --all`` prints through it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from croft.core import clock, when
from croft.core.text import for_terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from croft.core.problems import Problem

__all__ = ["problem_lines"]


def problem_lines(problems: Sequence[Problem]) -> list[str]:
    """The human form of problems: one ``severity: CODE: message`` line each, then hint, try and fix; their
    control characters escaped (a message may quote an API's answer or a file name)."""

    try:
        now = clock.now() if problems else None
    except Exception:  # a CROFT_NOW that does not parse is itself the problem being told: instants as written
        now = None
    lines = []
    for p in problems:
        where = f" [{p.asset}]" if p.asset else ""
        message = when.in_text(p.message, now) if now is not None else p.message
        lines.append(f"{p.severity}: {p.code}{where}: {message}")
        if p.hint:
            lines.append(f"  hint: {p.hint}")
        if p.suggestion:
            lines.append(f"  try: {p.suggestion}")
        if p.fix and p.fix.get("command"):
            lines.append(f"  fix: {p.fix['command']}")
        lines.append(f"  more: {p.docs}")
    return [for_terminal(line) for line in lines]
