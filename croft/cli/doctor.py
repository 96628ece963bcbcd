"""``croft doctor``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from croft.cli.logs import log_line
from croft.cli.render import json_option, run_command
from croft.core import clock, when
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.project.config import load_project
from croft.scheduler.control.doctor import doctor

if TYPE_CHECKING:
    from croft.project.config import Project


def _human(result: Result) -> str:
    return doctor_text(result.data)


@click.command("doctor")
@json_option
@run_command(_human)
def command() -> Result:
    """Check the scheduler chain: registry, OS job, daemon, interpreter, serve and each project's last tick."""

    return doctor(project=_here())


def _here() -> Project | None:
    """The project doctor is run in, if any: checked too, so one missing from the registry (a moved folder)
    shows up. Doctor must work anywhere, so a folder that is no project, or a broken one, is just skipped."""

    try:
        return load_project()
    except CroftError:
        return None


def doctor_text(data: dict[str, Any]) -> str:

    now = clock.now()
    lines = []
    for c in data.get("checks", []):
        mark = "⚠" if c.get("warning") else "✔" if c["ok"] else "✖"
        lines.append(f"{mark} {c['check']}: {when.in_text(c['detail'], now)}")
        if (c.get("warning") or not c["ok"]) and c["fix"]:
            lines.append(f"    fix: {c['fix']}")
    if data.get("logTail"):
        lines.append(f"tick log {data['logFile']} ends with:")
        lines += [f"    {log_line(x, now)}" for x in data["logTail"]]
    return "\n".join(lines)
