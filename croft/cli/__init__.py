"""The ``croft`` command: a lazy click group, so each invocation imports only the command it runs."""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # the idle tick goes through main() without loading typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

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
    "tick": "tick:command",
}


def _build_group() -> Any:
    import click

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted(COMMANDS)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            if name not in COMMANDS:
                return None
            module, attr = COMMANDS[name].split(":")
            return getattr(importlib.import_module(f"croft.cli.{module}"), attr)

    @click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(package_name="croft")
    def cli() -> None:
        """croft keeps local data fresh: ingests pull rows from APIs, transforms build tables from tables,
        and the scheduler runs them on time."""

    return cli


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["tick"] and "--all" not in args:  # every minute: no click (croft/cli/tick.py)
        from croft.cli.tick import run as tick

        sys.exit(tick(args[1:]))
    _build_group()(args=args, prog_name="croft")
