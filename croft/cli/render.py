"""One way out for every command: the JSON envelope with ``--json``, human text otherwise, and the exit code.

Commands build a Result and hand it here with a function that turns its data into text; problems and
next steps are printed the same way for every command.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from croft.core.problems import CroftError, Problem
from croft.core.result import Result, dumps

__all__ = ["emit", "json_option", "problem_lines", "respond", "run_command"]

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON envelope on stdout.")


def problem_lines(problems: list[Problem]) -> list[str]:
    lines = []
    for p in problems:
        where = f" [{p.asset}]" if p.asset else ""
        lines.append(f"{p.severity}: {p.code}{where}: {p.message}")
        if p.hint:
            lines.append(f"  hint: {p.hint}")
        if p.suggestion:
            lines.append(f"  try: {p.suggestion}")
        if p.fix and p.fix.get("command"):
            lines.append(f"  fix: {p.fix['command']}")
        lines.append(f"  more: {p.docs}")
    return lines


def emit(result: Result, as_json: bool, human: Callable[[Result], str] | None = None) -> None:
    if as_json:
        click.echo(dumps(result.envelope()))
    else:
        text = human(result) if human else ""
        if text:
            click.echo(text)
        lines = problem_lines(result.problems)
        if lines:
            click.echo("\n".join(lines), err=not result.is_ok or not text)
        if result.next:
            click.echo("next:")
            for step in result.next:
                click.echo(f"  {step.command}    # {step.reason}")
    sys.exit(result.exit_code)


def respond(
    as_json: bool,
    human: Callable[[Result], str] | None,
    work: Callable[..., Result],
    *args: Any,
    **kwargs: Any,
) -> None:
    """Call one core function and print its Result; CroftError becomes an envelope, never a traceback."""
    try:
        result = work(*args, **kwargs)
    except CroftError as exc:
        result = Result(problems=[exc.problem, *exc.extra])
    emit(result, as_json, human)


def run_command(
    human: Callable[[Result], str] | None = None,
) -> Callable[[Callable[..., Result]], Callable[..., None]]:
    """Decorator for a command body that returns a Result: adds the ``as_json`` handling."""

    def decorate(work: Callable[..., Result]) -> Callable[..., None]:
        @functools.wraps(work)
        def wrapper(*args: Any, as_json: bool = False, **kwargs: Any) -> None:
            respond(as_json, human, work, *args, **kwargs)

        return wrapper

    return decorate
