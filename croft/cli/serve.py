"""``croft serve``."""

from __future__ import annotations

import click

from croft.cli.render import json_option, run_command
from croft.core.result import Result


def _human(result: Result) -> str:
    d = result.data
    return (
        f"croft serve stopped after {d['ticks']} rounds ({d['started']} project ticks started)." if d else ""
    )


@click.command("serve")
@json_option
@run_command(_human)
def command() -> Result:
    """Tick this user's `--no-os-job` projects in the foreground, at start and every minute, until
    SIGTERM or Ctrl-C. For servers, containers and WSL, where no OS job runs."""
    from croft.scheduler.user.serve import serve

    return Result(data=serve(lambda line: click.echo(line, err=True)))
