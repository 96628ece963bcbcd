"""``croft schedule``: the scheduler's commands. For now ``explain``; on/off/pause/status join this group."""

from __future__ import annotations

import click

from croft.cli.render import json_option, run_command
from croft.core.result import Result

__all__ = ["group"]


@click.group("schedule", invoke_without_command=True)
@click.pass_context
def group(ctx: click.Context) -> None:
    """See when schedules fire (and, soon, turn the scheduler on, off or paused for this project)."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _human(result: Result) -> str:
    from croft.schedule.explain import explain_text

    return explain_text(result.data) if result.data else ""


@group.command("explain")
@click.argument("schedule", nargs=-1, required=True)
@click.option("--tz", "tz_name", help="IANA zone (default: the project's zone, or UTC outside a project).")
@click.option(
    "--after", help="Start after this instant, ISO-8601 or epoch ms (default: now; CROFT_NOW counts)."
)
@click.option("-n", "count", type=int, default=3, show_default=True, help="How many fires to show.")
@json_option
@run_command(_human)
def explain(schedule: tuple[str, ...], tz_name: str | None, after: str | None, count: int) -> Result:
    """Show the cron a SCHEDULE means and its next fires, in the zone schedules run in.

    \b
    Examples:
      croft schedule explain "weekdays at 9am"
      croft schedule explain "30 2 * * *" --tz America/Los_Angeles --after 2026-03-07T00:00:00Z
    """
    from croft.core import clock
    from croft.core.problems import CroftError
    from croft.schedule.explain import explain_schedule

    start = clock.now()
    if after is not None:
        try:
            start = clock.parse_instant(after)
        except ValueError as exc:
            raise CroftError(
                "USAGE", f"--after: {exc}", "give an ISO-8601 instant such as 2026-03-08T09:00:00Z"
            ) from None
    return explain_schedule(" ".join(schedule), tz_name or _project_zone(), start, count)


def _project_zone() -> str:
    """The zone of the project the command runs in (croft.json "timezone"), or UTC outside any project."""
    from croft.core.problems import CroftError
    from croft.project.config import find_root, load_config

    try:
        return load_config(find_root()).timezone
    except CroftError as exc:
        if exc.code == "NOT_A_PROJECT":
            return "UTC"
        raise
