"""``croft ui [--project DIR | --all] [--port N] [--no-open]``: the status page, until Ctrl-C."""

from __future__ import annotations

import signal
import threading
import webbrowser

import click

from croft.cli.flag import flag
from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.ui.server import start
from croft.ui.snapshot import Targets


def _human(result: Result) -> str:
    return "croft ui stopped." if result.data else ""


@click.command("ui")
@project_option
@flag("--all", "every", help="Show every registered project, not just this one.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="0: any free port.")
@flag("--no-open", help="Print the address only; do not open a browser.")
@json_option
@run_command(_human)
def command(project_dir: str | None, every: bool, port: int, no_open: bool) -> Result:
    """Serve a live status page on 127.0.0.1: one row per asset with its state, schedule, last run, trend
    and next fire; Run now, Pause 2h and Resume; each asset's runs and logs. Prints its address first."""

    if every and project_dir:
        raise CroftError(
            "USAGE", "--all shows every project; it does not go with --project", "Give one of them."
        )
    targets = Targets(None if every else load(project_dir).root)
    server = start(port, targets)
    click.echo(f"croft ui: {server.url}")  # the one line, first, on stdout: scripts read the address here
    if not no_open:
        webbrowser.open(server.url)
    stop = threading.Event()
    old = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        stop.wait()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        server.close()
    return Result(data={"port": server.port})
