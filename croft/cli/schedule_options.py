"""What every ``croft schedule`` action shares: the group's own ``--project``/``--json`` handed to the
action, the options saying how a project is ticked, and the human text of the setting."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from croft.cli.flag import flag
from croft.cli.project_option import project_option
from croft.cli.render import emit, json_option, run_command
from croft.cli.schedule_text import schedule_text
from croft.core.problems import problem
from croft.core.result import Result

__all__ = ["GROUP_KEY", "group_options", "progress", "project_action", "state_human", "ticking_options"]

GROUP_KEY = "croft.schedule.group"  # ctx.meta: the options given to the group, before the action


def group_options(work: Callable[..., None]) -> Callable[..., None]:
    """Let ``croft schedule --project DIR --json ACTION`` mean what ``croft schedule ACTION --project DIR
    --json`` means: the group's options are the action's, never silently dropped. Two different project
    folders, one on each side, are refused: croft would have to guess which one was meant."""

    takes_project = "project_dir" in inspect.signature(work).parameters

    @functools.wraps(work)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        given = click.get_current_context().meta.get(GROUP_KEY) or {}
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


def project_action(
    human: Callable[[Result], str],
) -> Callable[[Callable[..., Result]], Callable[..., None]]:
    """What every action on one project takes: ``--project`` and ``--json`` (on either side of the action's
    name), its Result told in ``human``'s words or as the envelope."""

    def decorate(work: Callable[..., Result]) -> Callable[..., None]:
        return project_option(json_option(group_options(run_command(human)(work))))

    return decorate


def state_human(result: Result) -> str:

    return schedule_text(result.data)


def progress() -> object:

    if not sys.stderr.isatty():
        return None
    return lambda line: click.echo(line, err=True)


def ticking_options(work: Callable[..., Any]) -> Callable[..., Any]:
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
