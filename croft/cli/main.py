"""The ``croft`` entry point: a lazy click group, so each invocation imports only the command it runs."""

from __future__ import annotations

import importlib
import sys

from croft.cli.boundary import last_resort

TYPE_CHECKING = False  # the idle tick goes through main() without loading typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["full_minute", "main"]

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


def _build_group() -> Any:
    import click

    from croft import __version__

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted(COMMANDS)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            if name not in COMMANDS:
                return None
            module, attr = COMMANDS[name].split(":")
            return getattr(importlib.import_module(f"croft.cli.{module}"), attr)

    @click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(version=__version__, prog_name="croft")
    def cli() -> None:
        """croft keeps local data fresh: ingests pull rows from APIs, transforms build tables from tables,
        and the scheduler runs them on time."""

    return cli


@last_resort
def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:2] == ["tick", "--all"]:  # the per-user tick runs every minute: the gate first, no click
        if len(args) == 2:  # a job an earlier croft installed (the OS job enters at cli/minute.py)
            from croft.scheduler.user.gate import enter

            if enter():
                sys.exit(0)
        full_minute(args)
    if args[:1] == ["tick"]:  # every minute: no click (croft/cli/tick.py)
        from croft.cli.tick import run as tick

        sys.exit(tick(args[1:]))
    if args == ["--version"]:  # what click's version option prints, without loading click for it
        from croft import __version__

        sys.stdout.write(f"croft, version {__version__}\n")
        sys.exit(0)
    if args[:2] == ["run", "--due"]:  # a scheduled run, as its tick starts it: no click (croft/cli/run.py)
        from croft.cli import run

        if run.due_args(args[1:]) is not None:
            run.run_due(args[1:])
    if args[:1] == ["status"]:  # the command typed most: its plain forms start without click
        from croft.cli import status

        if status.plain(args[1:]) is not None:
            status.run(args[1:])
    _run_click(args)


def full_minute(args: list[str]) -> None:
    """``croft tick --all [--json]`` past the minute gate: the full per-user tick (exits)."""
    import gc

    # A process of a second that loads its modules and reads a thousand projects' hints: what it
    # allocates is freed by reference counting, and the cycle collector would only walk it again.
    gc.disable()
    from croft.cli.tick_all import main as tick_all

    sys.exit(tick_all(args[2:]))


def _run_click(args: list[str]) -> None:
    """click without its own error printing: a usage error is a USAGE problem, printed like any other."""
    import click

    try:
        code = _build_group().main(args=args, prog_name="croft", standalone_mode=False, obj={"argv": args})
    except click.exceptions.Abort:
        raise KeyboardInterrupt from None
    except click.ClickException as exc:
        from croft.cli.usage import usage_error

        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            click.echo(ctx.get_help())  # bare `croft`: the help is the answer, not an error
            sys.exit(0)
        raise usage_error(exc, args) from None
    sys.exit(code if isinstance(code, int) else 0)
