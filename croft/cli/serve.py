"""``croft serve``."""

from __future__ import annotations

from collections.abc import Callable

import click

from croft.cli.render import json_option, run_command
from croft.core.result import Result
from croft.core.text import for_terminal
from croft.scheduler.control.metricserver import parse_address, start
from croft.scheduler.user.serve import serve


def _human(result: Result) -> str:
    d = result.data
    return (
        f"croft serve stopped after {d['ticks']} minutes ({d['started']} croft tick --all started)."
        if d
        else ""
    )


def _echo() -> Callable[[str], None]:
    """Where each line the tick log gains goes: standard output, or standard error with --json (whose
    standard output is the one envelope at the end); control characters escaped."""
    as_json = bool(click.get_current_context().params.get("as_json"))
    return lambda line: click.echo(for_terminal(line), err=as_json)


@click.command("serve")
@click.option(
    "--metrics",
    "metrics_at",
    metavar="HOST:PORT",
    default=None,
    help="Also serve `croft metrics` at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464), for Prometheus.",
)
@json_option
@run_command(_human)
def command(metrics_at: str | None) -> Result:
    """Tick this user's projects in the foreground, at start and every minute, until SIGTERM or Ctrl-C:
    each minute is a `croft tick --all` of its own, as the OS job's, which ticks the `--no-os-job`
    projects while serve runs. For servers, containers and WSL, where no OS job runs. Each line the tick
    log gains meanwhile is printed too (on standard error with --json)."""
    if metrics_at is None:
        return Result(data=serve(lambda line: click.echo(line, err=True), _echo()))
    metrics = start(parse_address(metrics_at))  # bound before serve starts: a taken port stops it here
    click.echo(f"croft serve: metrics at http://{metrics.address}/metrics", err=True)
    try:
        data = serve(lambda line: click.echo(line, err=True), _echo())
    finally:
        metrics.close()
    return Result(data={**data, "metrics": metrics.address})
