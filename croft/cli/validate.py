"""``croft validate``."""

from __future__ import annotations

import click

from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core.result import Result
from croft.project.validate import validate_project


def _human(result: Result) -> str:
    data = result.data
    lines = [
        f"{len(data['assets'])} assets, timezone {data['timezone']}, run order: {' -> '.join(data['order'])}"
    ]
    for a in data["assets"]:
        reads = f" reads {', '.join(a['inputs'])}" if a["inputs"] else ""
        lines.append(f"  {a['name']:<24} {a['kind']:<9}{reads}")
        sched = a.get("schedule")
        if sched and sched["cron"]:
            lines.append(f"  {'':<24} schedule {sched['text']!r} = cron {sched['cron']}")
            runs = sched.get("runsAt") or sched["next"]  # jitter or quiet hours: when each fire runs
            lines += [
                f"  {'':<24}   next {fire}" + (f" (runs {run})" if run != fire else "")
                for fire, run in zip(sched["next"], runs, strict=True)
            ]
    if result.is_ok:
        lines.append("valid")
    return "\n".join(lines)


@click.command("validate")
@project_option
@json_option
@run_command(_human)
def command(project_dir: str | None) -> Result:
    """Check every asset without running it: kind, inputs, schedule (its cron and next three fires), problems.

    Exits 2 when any error is found.
    """

    return validate_project(load(project_dir))
