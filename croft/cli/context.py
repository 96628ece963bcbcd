"""``croft context [--asset NAME]``: what a coding agent reads first (``croft.agents.context``)."""

from __future__ import annotations

from typing import Any

import click

from croft.agents.context import context
from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core import clock, when
from croft.core.result import Result


def _shown(text: object) -> str:
    """Text from outside on one line of its own; its control characters are escaped for the whole page by
    the renderer (``core.text.for_terminal``)."""
    return " ".join(str(text).splitlines())


def _asset_lines(a: dict[str, Any], now: Any) -> list[str]:
    head = f"{a['asset']} ({a['kind']}"
    head += f", {a['schedule']}" if a.get("schedule") else ""
    head += f", {a['rows']} rows" if a.get("rows") is not None else ""
    head += ")"
    if a.get("description"):
        head += f": {_shown(a['description'])}"
    lines = [head]
    if a.get("hold"):
        lines.append(f"    held {a['hold']['code']}: {_shown(a['hold']['reason'])}")
    if a.get("stale"):
        lines.append(f"    stale: {', '.join(a['stale'])}")
    last = a.get("lastRun")
    if last:
        error = f" {last['code']}: {_shown(last.get('message') or '')}" if last.get("code") else ""
        lines.append(f"    last run {last['status']} {when.clock(last['at'], now)}{error}")
    fresh = a.get("freshness")
    if fresh and fresh.get("breached"):
        lines.append(f"    older than promised ({fresh['within']}): {fresh.get('cause') or ''}")
    for key, words in (("reads", "reads"), ("readBy", "read by"), ("columns", "columns")):
        if a.get(key):
            lines.append(f"    {words}: {', '.join(a[key])}")
    lines += [f"    {_shown(p)}" for p in a.get("problems", [])]
    return lines


def _human(result: Result) -> str:
    data = result.data
    now = clock.now()
    project = data["project"]
    sched = project["scheduling"]
    beat = when.moment(sched["lastTickAt"], now) if sched.get("lastTickAt") else "never"
    lines = [
        f"croft project {project['root']} · {project['assets']} assets · timezone {project['timezone']}",
        f"scheduling {sched['setting']} · last tick {beat}" + (" (stale)" if sched.get("stale") else ""),
    ]
    if data["running"]:
        lines.append(f"running: {', '.join(r['runId'] for r in data['running'])}")
    lines.append("")
    for a in data["assets"]:
        lines += _asset_lines(a, now)
    if data.get("quietAssets"):
        lines.append(f"need nothing: {', '.join(data['quietAssets'])}")
    for f in data["recentFailures"]:
        lines.append("")
        lines.append(f"failed: {f['asset']} {f['runId']} {f['code']}: {_shown(f.get('message') or '')}")
        lines += [f"    | {_shown(line)}" for line in f["logTail"]]
    if data["fixes"]:
        lines.append("")
        lines.append("fixes croft computed:")
        lines += [f"  {x['command']}    # {x['reason']}" for x in data["fixes"]]
    lines.append("")
    lines.append("ask the user first:")
    lines += [f"  {x['what']}: {x['why']}" for x in data["askFirst"]]
    lines.append(f"held code waits for a person: {data['heldCodeWaitsForAPerson']}")
    if data["truncated"]:
        lines.append("(truncated to fit 20 KB: " + "; ".join(f"{k} left out" for k in data["leftOut"]) + ")")
    return "\n".join(lines)


@click.command("context")
@click.option("--asset", help="Only this asset, whole (its columns, reads and read by, its last failure).")
@project_option
@json_option
@run_command(_human)
def command(asset: str | None, project_dir: str | None) -> Result:
    """What a coding agent reads first: the project, each asset (schedule, hold, freshness, last run, columns,
    reads and read by), what is running, recent failures with their log tails, the fixes croft computed, and
    what to ask the user first. At most 20 KB; `truncated` says when something was left out."""

    return context(load(project_dir), asset)
