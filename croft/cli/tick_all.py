"""``croft tick --all [--json]``: what the OS job runs every minute, dispatched without click.

It runs 1,440 times a day, so ``croft.cli.main`` hands it ``argv`` before building the click group and
this module parses its one flag itself.
"""

from __future__ import annotations

import json
import sys

from croft.core import clock
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.scheduler.ticklog import TickLog
from croft.scheduler.user.tick_all import tick_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]


def main(args: list[str]) -> int:
    """``croft tick --all [--json]``; the exit code. Kept free of click: see the module docstring."""
    as_json = "--json" in args
    unknown = [a for a in args if a != "--json"]
    problems: list[dict[str, Any]] = []
    data: dict[str, Any] = {}
    code = 0
    if unknown:
        problems.append(
            {
                "code": "USAGE",
                "severity": "error",
                "message": f"croft tick --all takes no argument {unknown[0]!r}",
                "hint": "Run `croft tick --all` or `croft tick --all --json`.",
            }
        )
        code = 2
    else:
        try:
            data = tick_all()
        except CroftError as exc:
            problems.append(exc.problem.to_dict())
            code = 1
        except Exception as exc:  # the job must log and end, never hang or lose the reason
            import traceback

            TickLog.of(croft_home()).write(
                clock.to_iso(clock.now()), "tick failed: " + "".join(traceback.format_exception(exc)).rstrip()
            )
            problems.append(
                {
                    "code": "INTERNAL_ERROR",
                    "severity": "error",
                    "message": f"croft tick --all failed: {type(exc).__name__}: {exc}",
                    "hint": "The traceback is in the tick log; please report it.",
                }
            )
            code = 1
    if as_json:
        envelope = {"ok": code == 0, "data": data, "problems": problems, "next": []}
        sys.stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
    elif problems:
        for p in problems:
            sys.stderr.write(f"error: {p['code']}: {p['message']}\n  hint: {p['hint']}\n")
    elif sys.stdout.isatty():
        sys.stdout.write("\n".join(data.get("notes", [])) + ("\n" if data.get("notes") else ""))
    return code
