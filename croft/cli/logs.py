"""``croft logs [ASSET | RUN_ID] [--failed] [--runs] [--since ISO]``."""

from __future__ import annotations

from datetime import datetime

import click

from croft.cli.flag import flag
from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core import clock, when
from croft.core.clock import parse_instant
from croft.core.duration import words
from croft.core.result import Result
from croft.engine.logs import show_logs
from croft.history.runs import started_by_words


def log_line(line: str, now: datetime) -> str:
    """A log line (``<ISO instant> text``: a step's, the tick log's) with the reader's clock to the second
    in front."""
    stamp, _, rest = line.partition(" ")
    if len(stamp) >= 16 and stamp[4] == "-" and stamp[10] == "T":
        try:
            return f"{when.stamp(stamp)} {when.in_text(rest, now)}"
        except ValueError:
            pass
    return when.in_text(line, now)


def _step_lines(step: dict, with_log: bool, now: datetime, by: bool = True) -> list[str]:
    tries = f" (attempt {step['attempt']})" if step["attempt"] > 1 else ""
    trigger = f", {started_by_words(step.get('trigger'))}" if by else ""
    head = f"{when.clock(step['startedAt'], now)}  {step['asset']}  {step['status']}{tries}  {step['runId']}{trigger}"
    lines = [head]
    if step.get("error"):
        lines.append(f"    {step['error']['code']}: {when.in_text(step['error']['message'], now)}")
        lines += _body_lines(step["error"])
    if step["status"] == "skipped":
        lines.append(f"    skipped: {step['reason']}")
    if with_log:
        lines += [f"    | {log_line(line, now)}" for line in step.get("lines", [])[-20:]]
    return lines


BODY_LINES = 5


def _body_lines(error: dict) -> list[str]:
    """The first lines of a rejected request's response (already redacted): what the server said."""
    body = str((error.get("details") or {}).get("body") or "").strip()
    if not body or error.get("code") != "HTTP_ERROR":
        return []
    lines = body.splitlines()
    shown = [f"    response: {lines[0][:200]}", *(f"              {x[:200]}" for x in lines[1:BODY_LINES])]
    if len(lines) > BODY_LINES:
        shown.append(f"              … {len(lines) - BODY_LINES} more lines (croft logs --json has them)")
    return shown


def _run_words(run: dict, now: datetime) -> str:
    """What started a run: "scheduled: items, item_totals" or "by hand: croft run items"."""
    assets = list(dict.fromkeys(step["asset"] for step in run.get("steps", [])))
    if run["trigger"] == "schedule":
        return "scheduled" + (f": {', '.join(assets)}" if assets else "")
    if run["trigger"] == "dagster":  # croft.dagster: a materialization Dagster asked for
        return "by Dagster" + (f": {', '.join(assets)}" if assets else "")
    argv = [a for a in (run.get("argv") or []) if a not in ("--json",)]
    by = started_by_words(run["trigger"])
    return f"{by}: " + " ".join(["croft", *argv]) if argv else by


def _span(run: dict, now: datetime) -> str:
    start = when.clock(run["startedAt"], now)
    if not run.get("finishedAt"):
        return f"{start}, still running"
    took = (parse_instant(run["finishedAt"]) - parse_instant(run["startedAt"])).total_seconds()
    return f"{start}, took {words(took)}"


def _human(result: Result) -> str:
    data = result.data
    now = clock.now()
    lines: list[str] = []
    if data["mode"] == "run":
        run = data["run"]
        lines.append(
            f"run {run['runId']} ({started_by_words(run['trigger'])}): {run['status']}, {_span(run, now)}"
        )
        for step in data["steps"]:
            lines += _step_lines(step, True, now, by=False)
    elif data["mode"] == "runs":
        for run in data["runs"]:
            lines.append(
                f"{when.clock(run['startedAt'], now)}  {run['runId']}  {run['status']}  {_run_words(run, now)}"
            )
            for step in run["steps"]:
                tries = f" (attempt {step['attempt']})" if step["attempt"] > 1 else ""
                lines.append(
                    f"    {step['asset']} {step['status']}{tries}"
                    + (f" {step['error']['code']}" if step.get("error") else "")
                )
    else:
        for step in data["steps"]:
            lines += _step_lines(step, True, now)
    return "\n".join(lines) or "no history yet"


@click.command("logs")
@click.argument("target", required=False)
@flag("--failed", help="Only failed, crashed or interrupted attempts.")
@flag("--runs", "runs_only", help="List runs with their steps instead of steps.")
@click.option("--since", help="Only what started at or after this ISO time.")
@project_option
@json_option
@run_command(_human)
def command(
    target: str | None, failed: bool, runs_only: bool, since: str | None, project_dir: str | None
) -> Result:
    """The history of attempts, newest first: for one ASSET, or one run's whole report by its id prefix (r_...)."""

    return show_logs(load(project_dir), target, failed=failed, runs_only=runs_only, since=since)
