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

from croft.cli.flag import flag
from croft.cli.problemtext import problem_lines
from croft.core.envelope import dumps
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.core.text import for_terminal

__all__ = ["command_line", "emit", "json_option", "problem_lines", "respond", "run_command"]

json_option = flag("--json", "as_json", help="Print one JSON envelope on stdout.")


def _echo(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def command_line() -> list[str]:
    """The arguments croft was really invoked with (after ``croft``), as main() received them."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    if isinstance(obj, dict) and isinstance(obj.get("argv"), list):
        return list(obj["argv"])
    return sys.argv[1:]


def emit(result: Result, as_json: bool, human: Callable[[Result], str] | None = None) -> None:
    if as_json:
        _echo(dumps(result.envelope()))
    else:
        # A failed result that carries no data (a CroftError, a refusal) is told by its problems alone:
        # the renderers only ever see the data their command's success builds.
        text = for_terminal(human(result)) if human and result.data else ""  # what came from outside, escaped
        if text:
            _echo(text)
        lines = problem_lines(result.problems)
        if lines:
            _echo("\n".join(lines), err=not result.is_ok or not text)
        if result.next:
            _echo("next:")
            for step in result.next:
                _echo(for_terminal(f"  {step.command}    # {step.reason}"))
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
