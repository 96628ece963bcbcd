"""``croft schedule explain``: the cron a schedule means and its next fires, or an ingest's own."""

from __future__ import annotations

from pathlib import Path

import click

from croft.cli.project_option import load
from croft.cli.render import json_option, run_command
from croft.cli.schedule_options import group_options
from croft.cli.schedule_text import explain_text
from croft.core import clock
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.project.config import find_root, load_config
from croft.schedule.explain import explain_schedule
from croft.scheduler.control.explainasset import explain_asset

__all__ = ["explain"]


def _human(result: Result) -> str:

    return explain_text(result.data) if result.data else ""


@click.command("explain")
@click.argument("schedule", nargs=-1)
@click.option("--asset", help="Explain this ingest's own schedule, with its jitter and quiet hours.")
@click.option("--tz", "tz_name", help="IANA zone (default: the project's zone, or UTC outside a project).")
@click.option(
    "--after", help="Start after this instant, ISO-8601 or epoch ms (default: now; CROFT_NOW counts)."
)
@click.option("-n", "count", type=int, default=3, show_default=True, help="How many fires to show.")
@json_option
@group_options
@run_command(_human)
def explain(
    schedule: tuple[str, ...],
    asset: str | None,
    tz_name: str | None,
    after: str | None,
    count: int,
    project_dir: str | None = None,
) -> Result:
    """Show the cron a SCHEDULE means and its next fires, in the zone schedules run in.

    \b
    Examples:
      croft schedule explain "weekdays at 9am"
      croft schedule explain "30 2 * * *" --tz America/Los_Angeles --after 2026-03-07T00:00:00Z
      croft schedule explain --asset orders     (its schedule, jitter and quiet hours)
    """

    start = clock.now()
    if after is not None:
        try:
            start = clock.parse_instant(after)
        except ValueError as exc:
            raise CroftError(
                "USAGE", f"--after: {exc}", "give an ISO-8601 instant such as 2026-03-08T09:00:00Z"
            ) from None
    if asset is not None:
        return explain_asset(load(project_dir), asset, tz_name, start, count)
    if not schedule:
        raise CroftError(
            "USAGE",
            "croft schedule explain needs a SCHEDULE or --asset NAME",
            'e.g. croft schedule explain "weekdays at 9am", or croft schedule explain --asset orders',
        )
    return explain_schedule(" ".join(schedule), tz_name or _project_zone(project_dir), start, count)


def _project_zone(project_dir: str | None = None) -> str:
    """The zone of the project the command runs in (croft.json "timezone"), or UTC outside any project.
    ``project_dir``: ``croft schedule --project DIR explain``'s folder, whose zone it then is."""

    try:
        return load_config(find_root(Path(project_dir) if project_dir else None)).timezone
    except CroftError as exc:
        if exc.code == "NOT_A_PROJECT":
            return "UTC"
        raise
