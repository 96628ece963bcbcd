"""``croft schedule``: the scheduler's commands. For now ``explain``; on/off/pause/status join this group."""

from __future__ import annotations

import click

from croft.cli.project_option import load, project_option
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


def _setting_human(result: Result) -> str:
    data = result.data
    return f"scheduling is {data['state']} for this project" if data else ""


@group.command("on")
@click.option(
    "--no-os-job",
    "no_os_job",
    is_flag=True,
    help="Only turn scheduling on in this project; `croft tick` (run by you, cron or `croft serve`) does the ticking.",
)
@project_option
@json_option
@run_command(_setting_human)
def on(no_os_job: bool, project_dir: str | None) -> Result:
    """Turn scheduling on for this project (for now only with --no-os-job: no OS job is installed)."""
    from croft.core.problems import CroftError

    if not no_os_job:
        raise CroftError(
            "USAGE",
            "this croft cannot install the per-user OS job yet",
            "croft schedule on --no-os-job turns scheduling on; then run croft tick every minute yourself",
            suggestion="croft schedule on --no-os-job",
        )
    return _flip(project_dir, "on")


@group.command("off")
@project_option
@json_option
@run_command(_setting_human)
def off(project_dir: str | None) -> Result:
    """Turn scheduling off for this project: ticks exit at once and start nothing."""
    return _flip(project_dir, "off")


def _flip(project_dir: str | None, state: str) -> Result:
    """Only the setting in runs.sqlite (croft.schedule.setting); nothing else is installed or removed."""
    from croft.core import clock
    from croft.history.db import open_history
    from croft.schedule.setting import write_scheduling

    project = load(project_dir)
    conn = open_history(project.config.state_dir)
    try:
        after = write_scheduling(
            conn, "on" if state == "on" else "off", clock.now(), via="serve" if state == "on" else None
        )
    finally:
        conn.close()
    return Result(data=after.to_json())
