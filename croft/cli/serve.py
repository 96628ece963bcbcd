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
    """Tick this user's `--no-os-job` projects in the foreground, at start and every minute, until
    SIGTERM or Ctrl-C. For servers, containers and WSL, where no OS job runs."""
    from croft.scheduler.user.serve import serve

    if metrics_at is None:
        return Result(data=serve(lambda line: click.echo(line, err=True)))
    from croft.scheduler.control.metricserver import parse_address, start

    metrics = start(parse_address(metrics_at))  # bound before serve starts: a taken port stops it here
    click.echo(f"croft serve: metrics at http://{metrics.address}/metrics", err=True)
    try:
        data = serve(lambda line: click.echo(line, err=True))
    finally:
        metrics.close()
    return Result(data={**data, "metrics": metrics.address})
