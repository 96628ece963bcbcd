"""``croft status``."""

from __future__ import annotations

import click

from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core.result import Result


def _human(result: Result) -> str:
    lines = [f"{'ASSET':<24} {'KIND':<9} {'ROWS':>7}  {'LAST LOADED':<27} {'LAST RUN':<11} STATE"]
    for a in result.data["assets"]:
        last = a["lastRun"]
        state = "stale: " + ", ".join(r["text"] for r in a["staleReasons"]) if a["stale"] else "fresh"
        if a["problems"]:
            state = f"invalid: {a['problems'][0]['code']}"
        lines.append(
            f"{a['asset']:<24} {a['kind']:<9} {a['rows'] if a['rows'] is not None else '-':>7}  "
            f"{a['lastLoadedAt'] or '-':<27} {(last['status'] if last else 'never'):<11} {state}"
        )
        if last and last.get("code"):
            lines.append(f"{'':<24} last error {last['code']}: {last['message']}")
    if result.data["running"]:
        lines.append(f"{len(result.data['running'])} run(s) in progress")
    from croft.scheduler.tick.view import status_lines

    lines += status_lines(result.data)
    return "\n".join(lines)


@click.command("status")
@project_option
@json_option
@run_command(_human)
def command(project_dir: str | None) -> Result:
    """Every asset: kind, rows, last loaded, fresh or stale and why, and its last run's result."""
    from croft.engine.status import project_status
    from croft.scheduler.control.commands import stale_warning
    from croft.scheduler.tick.view import with_schedule

    project = load(project_dir)
    result = with_schedule(project_status(project), project)
    stale = stale_warning(project)  # scheduling on but nothing ticked for 3 minutes: say so, and why
    if stale:
        result.problems.append(stale)
    return result
