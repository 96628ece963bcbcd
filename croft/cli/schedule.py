"""``croft schedule``: turn the scheduler on, off or paused for a project, see its status, explain a schedule."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from croft.cli.flag import flag
from croft.cli.project_option import load, project_option
from croft.cli.render import emit, json_option, run_command
from croft.cli.schedule_simulate import simulate
from croft.cli.schedule_text import explain_text, schedule_text
from croft.core import clock
from croft.core.problems import CroftError, problem
from croft.core.result import Result
from croft.project.config import find_root, load_config
from croft.schedule.explain import explain_schedule
from croft.scheduler.control.assetpause import pause_asset, pause_words, resume_asset
from croft.scheduler.control.commands import schedule_off, schedule_on, schedule_pause, schedule_status
from croft.scheduler.control.explainasset import explain_asset

__all__ = ["group"]

# Words people reach for; each means one of the actions.
SYNONYMS = {
    "enable": "on",
    "start": "on",
    "disable": "off",
    "stop": "off",
    "show": "status",
    "list": "status",
}


class _ScheduleGroup(click.Group):
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, SYNONYMS.get(cmd_name, cmd_name))


@click.group("schedule", cls=_ScheduleGroup, invoke_without_command=True)
@project_option
@json_option
@click.pass_context
def group(ctx: click.Context, project_dir: str | None, as_json: bool) -> None:
    """Turn the scheduler on, off or paused for this project; bare `croft schedule` shows its status."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(status, project_dir=project_dir, as_json=as_json)
        return
    ctx.meta[_GROUP_KEY] = {"project_dir": project_dir, "as_json": as_json}


_GROUP_KEY = "croft.schedule.group"


def _group_options(work: Callable[..., None]) -> Callable[..., None]:
    """Let ``croft schedule --project DIR --json ACTION`` mean what ``croft schedule ACTION --project DIR
    --json`` means: the group's options are the action's, never silently dropped. Two different project
    folders, one on each side, are refused: croft would have to guess which one was meant."""

    takes_project = "project_dir" in inspect.signature(work).parameters

    @functools.wraps(work)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        given = click.get_current_context().meta.get(_GROUP_KEY) or {}
        if given.get("as_json"):
            kwargs["as_json"] = True
        outer = given.get("project_dir")
        if outer is not None and "project_dir" in kwargs:
            inner = kwargs["project_dir"]
            if inner is not None and _same_folder(inner, outer) is False:
                _refuse(
                    kwargs.get("as_json", False),
                    f"croft schedule --project {outer} and {work.__name__} --project {inner} name two"
                    " different projects",
                    f"Give --project once: croft schedule {work.__name__} --project DIR.",
                )
            kwargs["project_dir"] = inner if inner is not None else outer
        elif outer is not None and takes_project:
            kwargs["project_dir"] = outer  # explain: the group's project gives the zone
        work(*args, **kwargs)

    return wrapper


def _same_folder(a: str, b: str) -> bool:

    return Path(a).resolve() == Path(b).resolve()


def _refuse(as_json: bool, message: str, hint: str) -> None:

    emit(Result(problems=[problem("USAGE", message, hint)]), as_json)


def _human(result: Result) -> str:

    return explain_text(result.data) if result.data else ""


@group.command("explain")
@click.argument("schedule", nargs=-1)
@click.option("--asset", help="Explain this ingest's own schedule, with its jitter and quiet hours.")
@click.option("--tz", "tz_name", help="IANA zone (default: the project's zone, or UTC outside a project).")
@click.option(
    "--after", help="Start after this instant, ISO-8601 or epoch ms (default: now; CROFT_NOW counts)."
)
@click.option("-n", "count", type=int, default=3, show_default=True, help="How many fires to show.")
@json_option
@_group_options
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


def _state_human(result: Result) -> str:

    return schedule_text(result.data)


def _progress() -> object:

    if not sys.stderr.isatty():
        return None
    return lambda line: click.echo(line, err=True)


def _ticking_options(work: Callable[..., Any]) -> Callable[..., Any]:
    """``--no-os-job`` and ``--backend``: how the project is ticked (``on``, and ``resume`` without ASSET)."""
    work = click.option(
        "--backend",
        type=click.Choice(["auto", "crontab", "launchd", "systemd"]),
        default="auto",
        show_default=True,
        help="Which OS job to install (auto: launchd on macOS, systemd where a user manager answers, else"
        " crontab).",
    )(work)
    return flag("--no-os-job", help="Install no OS job: a running `croft serve` ticks this project.")(work)


@group.command("on")
@_ticking_options
@project_option
@json_option
@_group_options
@run_command(_state_human)
def on(no_os_job: bool, backend: str, project_dir: str | None) -> Result:
    """Let the scheduler run this project's ingests: records the setting, registers the project, installs
    the per-user job and waits for its first tick (CROFT_HEARTBEAT_WAIT_MS, default 70 s)."""

    return schedule_on(
        load(project_dir),
        no_os_job=no_os_job,
        backend_name=backend,
        progress=_progress(),  # type: ignore[arg-type]
    )


@group.command("off")
@project_option
@json_option
@_group_options
@run_command(_state_human)
def off(project_dir: str | None) -> Result:
    """Stop scheduling this project; the OS job goes once no project needs it."""

    return schedule_off(load(project_dir))


def _pause_human(result: Result) -> str:
    if "asset" in result.data:
        return pause_words(result.data)
    return _state_human(result)


@group.command("pause")
@click.argument("asset", required=False)
@click.option("--for", "length", help="How long: 90m, 1h30m, 2 days... (default: until resumed).")
@project_option
@json_option
@_group_options
@run_command(_pause_human)
def pause(asset: str | None, length: str | None, project_dir: str | None) -> Result:
    """Start nothing until the pause ends or `croft schedule on`; with ASSET, pause only that asset
    (`croft schedule resume ASSET` ends it) while the rest of the project runs."""
    if asset is not None:
        return pause_asset(load(project_dir), asset, length)

    return schedule_pause(load(project_dir), length)


@group.command("resume")
@click.argument("asset", required=False)
@_ticking_options
@project_option
@json_option
@_group_options
@run_command(_pause_human)
def resume(asset: str | None, no_os_job: bool, backend: str, project_dir: str | None) -> Result:
    """Let the scheduler run ASSET again after `croft schedule pause ASSET`; without ASSET, the same as
    `croft schedule on`."""
    if asset is not None:
        if no_os_job or backend != "auto":
            from croft.core.problems import CroftError

            raise CroftError(
                "USAGE",
                f"--no-os-job and --backend say how the project is ticked, not {asset}",
                f"croft schedule resume {asset} resumes the asset; croft schedule on --no-os-job the project",
            )
        return resume_asset(load(project_dir), asset)
    return schedule_on(load(project_dir), no_os_job=no_os_job, backend_name=backend, progress=_progress())  # type: ignore[arg-type]


@group.command("status")
@project_option
@json_option
@_group_options
@run_command(_state_human)
def status(project_dir: str | None) -> Result:
    """The setting, the OS job, the last tick (and whether it is stale), and each asset's schedule."""

    return schedule_status(load(project_dir))


group.add_command(simulate)
