"""The ``croft`` click group: lazy, so an invocation imports only the command it runs.

Every command's arguments, help and usage errors are click's; ``croft.cli.main`` hands every invocation
here (``croft tick --all`` after the minute gate said the minute needs a look).
"""

from __future__ import annotations

import importlib
import sys

import click

from croft import __version__
from croft.cli.usage import usage_error

__all__ = ["COMMANDS", "LazyGroup", "build_group", "run"]

# command name -> "module:attribute" inside croft.cli. Adding a command is one line here and one module.
COMMANDS: dict[str, str] = {
    "init": "init:command",
    "validate": "validate:command",
    "run": "run:command",
    "preview": "preview:command",
    "status": "status:command",
    "logs": "logs:command",
    "schedule": "schedule:group",
    "docs": "docs:command",
    "serve": "serve:command",
    "doctor": "doctor:command",
    "tick": "tick:command",
    "ui": "ui:command",
    "notify": "notify:group",
    "metrics": "metrics:command",
    "context": "context:command",
    "mcp": "mcp:command",
}


class LazyGroup(click.Group):
    """Lists every command by name; imports a command's module only when that command is asked for.

    ``lazy`` maps a command's name to ``"module:attribute"`` inside ``croft.cli`` (``COMMANDS`` for croft
    itself; ``croft schedule`` has its own map, so ``croft schedule status`` loads no scheduling action).
    """

    lazy: dict[str, str] = COMMANDS

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.lazy)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.lazy:
            return None
        module, attr = self.lazy[name].split(":")
        command: click.Command = getattr(importlib.import_module(f"croft.cli.{module}"), attr)
        return command


def build_group() -> click.Group:
    @click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(version=__version__, prog_name="croft")
    def cli() -> None:
        """croft keeps local data fresh: ingests pull rows from APIs, transforms build tables from tables,
        and the scheduler runs them on time."""

    return cli


def run(args: list[str]) -> None:
    """click without its own error printing: a usage error is a USAGE problem, printed like any other."""
    try:
        code = build_group().main(args=args, prog_name="croft", standalone_mode=False, obj={"argv": args})
    except click.exceptions.Abort:
        raise KeyboardInterrupt from None
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        # bare `croft`: the help is the answer, not an error (click >= 8.2 raises it; 8.1 printed it)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            click.echo(ctx.get_help())
            sys.exit(0)
        raise usage_error(exc, args) from None
    sys.exit(code if isinstance(code, int) else 0)
