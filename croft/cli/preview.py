"""``croft preview ASSET``."""

from __future__ import annotations

import json

import click

from croft.cli.flag import flag
from croft.cli.preview_watch import watch as watch_loop
from croft.cli.project_option import load, project_option
from croft.cli.render import command_line, json_option, run_command
from croft.core.result import Result
from croft.engine.runner import RunOptions, run_assets
from croft.engine.settings import starter


def _human(result: Result) -> str:
    lines = []
    for step in result.data.get("steps", []):
        rows = step.get("rows") or {}
        lines.append(f"preview of {step['asset']}: {step['status']}")
        if rows:
            lines.append(
                f"  a real run would add {rows['added']}, update {rows['updated']}, delete {rows['deleted']}"
                f" and keep {rows['unchanged']} rows"
            )
        for row in step.get("sample", [])[:10]:
            lines.append("  " + json.dumps(row, default=str))
        if step.get("error"):
            lines.append(f"  {step['error']['code']}: {step['error']['message']}")
    lines.append("nothing was written")
    return "\n".join(lines)


def _human_or_watch(result: Result) -> str:
    if result.data.get("stopped"):
        return f"stopped watching {result.data['asset']} after {result.data['previews']} previews; nothing was written"
    return _human(result)


@click.command("preview")
@click.argument("asset")
@flag(
    "--watch",
    help="Stay running and preview again each time the asset, a module it imports or an input table changes.",
)
@project_option
@json_option
@run_command(_human_or_watch)
def command(asset: str, project_dir: str | None, watch: bool = False) -> Result:
    """Run ASSET without committing: show its rows and what a real run would change.

    The cursor does not move. A preview that succeeds approves the code for the scheduler, as a run does.
    With --watch, each save previews again (Ctrl-C ends it, exit 130); --json then prints one envelope per
    preview and a last one when it stops.
    """
    if watch:
        return watch_loop(load(project_dir), asset, as_json=click.get_current_context().params["as_json"])

    trigger, human = starter()
    options = RunOptions(
        selectors=[asset], only=True, preview=True, argv=command_line(), trigger=trigger, human=human
    )
    return run_assets(load(project_dir), options)
