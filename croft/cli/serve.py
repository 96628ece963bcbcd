"""``croft serve``."""

from __future__ import annotations

import click

from croft.cli.render import json_option, respond
from croft.core.result import Result


def _human(result: Result) -> str:
    d = result.data
    return (
        f"croft serve stopped after {d['ticks']} rounds ({d['started']} project ticks started)." if d else ""
    )


@click.command("serve")
@json_option
def command(as_json: bool = False) -> None:
    """Tick this user's `--no-os-job` projects in the foreground, at start and every minute, until
    SIGTERM or Ctrl-C. For servers, containers and WSL, where no OS job runs. Each line the tick log
    gains meanwhile is printed too: on standard output, or on standard error with --json (whose standard
    output is the one envelope at the end)."""
    from croft.core.text import for_terminal
    from croft.scheduler.user.serve import serve

    def echo(line: str) -> None:
        click.echo(for_terminal(line), err=as_json)

    respond(as_json, _human, lambda: Result(data=serve(lambda line: click.echo(line, err=True), echo)))
