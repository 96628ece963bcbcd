"""``croft init [DIR]``."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from croft.cli.render import json_option, run_command
from croft.core.result import Next, Result


def _init(directory: str, timezone: str | None) -> Result:
    from croft.project.scaffold import init_project

    data = init_project(Path(directory), timezone)
    go = f"cd {shlex.quote(str(data['root']))} && " if Path(directory).resolve() != Path.cwd() else ""
    return Result(
        data=data,
        next=[
            Next(f"{go}croft validate", "see each asset, its inputs and its schedule"),
            Next(
                f"{go}croft run",
                "build every asset once; a run by a person also approves it for the scheduler",
            ),
        ],
    )


def _human(result: Result) -> str:
    data = result.data
    lines = [f"Created a croft project in {data['root']} (timezone {data['timezone']})"]
    lines += [f"  + {rel}" for rel in data["written"]]
    lines += [f"  = {rel} (kept as it was)" for rel in data["kept"]]
    return "\n".join(lines)


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--timezone", help="IANA zone for schedules (default: this machine's zone).")
@json_option
@run_command(_human)
def command(directory: str, timezone: str | None) -> Result:
    """Make a working project in DIRECTORY (default: here): croft.json, assets/, lib/, .env.example,
    an example ingest and an example SQL transform that run offline."""
    return _init(directory, timezone)
