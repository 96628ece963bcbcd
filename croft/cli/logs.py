"""``croft logs [ASSET | RUN_ID] [--failed] [--runs] [--since ISO]``."""

from __future__ import annotations

import click

from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core.result import Result


def _step_lines(step: dict, with_log: bool) -> list[str]:
    by = "schedule" if step.get("trigger") == "schedule" else "manual"
    head = (
        f"{step['startedAt']}  {step['runId']}  {step['asset']}#{step['attempt']}  {step['status']}  ({by})"
    )
    lines = [head]
    if step.get("error"):
        lines.append(f"    {step['error']['code']}: {step['error']['message']}")
    if step["status"] == "skipped":
        lines.append(f"    skipped: {step['reason']}")
    if with_log:
        lines += [f"    | {line}" for line in step.get("lines", [])[-20:]]
    return lines


def _human(result: Result) -> str:
    data = result.data
    lines: list[str] = []
    if data["mode"] == "run":
        run = data["run"]
        lines.append(
            f"run {run['runId']} ({run['trigger']}): {run['status']}, {run['startedAt']} - {run['finishedAt']}"
        )
        for step in data["steps"]:
            lines += _step_lines(step, True)
    elif data["mode"] == "runs":
        for run in data["runs"]:
            lines.append(
                f"{run['startedAt']}  {run['runId']}  {run['status']}  ({run['trigger']})  "
                + " ".join(run["argv"] or [])
            )
            for step in run["steps"]:
                lines.append(
                    f"    {step['asset']}#{step['attempt']} {step['status']}"
                    + (f" {step['error']['code']}" if step.get("error") else "")
                )
    else:
        for step in data["steps"]:
            lines += _step_lines(step, True)
    return "\n".join(lines) or "no history yet"


@click.command("logs")
@click.argument("target", required=False)
@click.option("--failed", is_flag=True, help="Only failed, crashed or interrupted attempts.")
@click.option("--runs", "runs_only", is_flag=True, help="List runs with their steps instead of steps.")
@click.option("--since", help="Only what started at or after this ISO time.")
@project_option
@json_option
@run_command(_human)
def command(
    target: str | None, failed: bool, runs_only: bool, since: str | None, project_dir: str | None
) -> Result:
    """The history of attempts, newest first: for one ASSET, or one run's whole report by its id prefix (r_...)."""
    from croft.engine.logs import show_logs

    return show_logs(load(project_dir), target, failed=failed, runs_only=runs_only, since=since)
