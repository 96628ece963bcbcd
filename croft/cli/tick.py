"""``croft tick [--all] [--json] [--project DIR] [--log-as NAME]``: a project's tick, or every project's.

One click command, three callers: a person ticks one project (``tick``), the OS job and ``croft serve``
tick every registered project (``--all``: ``cli.tick_all``, after the minute gate looked first), and that
per-user tick hands full project ticks to workers (``--batch``, hidden: ``scheduler.tick.batch``).

Each mode imports its own room when chosen (``cli.tick_one``, ``cli.tick_all``, ``scheduler.tick.batch``),
the one exception to imports at the top in ``cli/``: the per-user minute runs every minute of every user
whose projects ping, and the project tick's modules (about a third of its CPU) are not its to load
unless a project needs a full tick.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import click

from croft.cli.flag import flag
from croft.cli.problemtext import problem_lines
from croft.cli.project_option import project_option
from croft.cli.render import json_option
from croft.core import clock
from croft.scheduler.tick.report import tick_text
from croft.scheduler.ticklog import NamedLines

__all__ = ["command"]


def _log_as(name: str | None) -> None:
    """``--log-as NAME``: from here on, what this tick prints (stdout and stderr are the tick log, a
    traceback included) is written as tick log lines naming its project (``scheduler.ticklog``)."""
    if not name:
        return
    sys.stdout.flush()
    sys.stdout = sys.stderr = NamedLines(sys.stdout.fileno(), name, _stamp)


def _stamp() -> str:
    return clock.to_iso(clock.now())


def _said(data: dict[str, Any], problems: list[Any]) -> list[str]:
    """What one project tick of ``croft tick --batch`` (``scheduler.tick.batch``) says in the tick log."""
    lines = [tick_text(data)] if data else []
    if problems:
        lines += problem_lines(problems)
    return lines


class _TickCommand(click.Command):
    """``--log-as NAME`` takes effect before click parses the rest, so that even a usage error is a line
    of the tick log naming the project (``croft tick --all`` and ``croft serve`` write that argv)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for i, word in enumerate(args):
            if word == "--log-as" and i + 1 < len(args):
                _log_as(args[i + 1])
            elif word.startswith("--log-as="):
                _log_as(word.split("=", 1)[1])
        return super().parse_args(ctx, args)


@click.command("tick", cls=_TickCommand)
@flag(
    "--all",
    "every",
    help="Tick every registered project: what the per-user OS job runs every minute.",
)
@click.option(
    "--log-as",
    "name",
    metavar="NAME",
    help="Write every line printed as a tick log line naming NAME (how a tick started for a freed slot"
    " of the per-user cap runs, its output going to the tick log).",
)
@flag("--batch", "worker", hidden=True, help="The worker `croft tick --all` hands full ticks to.")
@project_option
@json_option
@click.pass_context
def command(
    ctx: click.Context, every: bool, name: str | None, worker: bool, project_dir: str | None, as_json: bool
) -> None:
    """Run the project's tick once: if scheduling is on, start one detached `croft run --due` per group of
    due assets and list the held ones.

    The per-user OS job (or `croft serve`) runs it every minute; you rarely need to run it yourself.
    """
    if every or worker:
        mode = "--all" if every else "--batch"
        given = [word for word, on in (("--batch", worker and every), ("--project", project_dir),
                                       ("--log-as", name), ("--json", worker and as_json)) if on]  # fmt: skip
        if given:
            raise click.UsageError(f"{mode} does not go with {given[0]}", ctx)
    if worker:
        from croft.scheduler.tick.batch import work

        sys.exit(work(_said))
    if every:
        from croft.cli.tick_all import main as tick_all

        # A process of a second that loads its modules and reads a thousand projects' hints: what it
        # allocates is freed by reference counting, and the cycle collector would only walk it again.
        gc.disable()
        sys.exit(tick_all(as_json))
    from croft.cli.tick_one import tick

    sys.exit(tick(project_dir, name, as_json))
