"""``croft doctor``."""

from __future__ import annotations

import click

from croft.cli.render import json_option, run_command
from croft.core.result import Result


def _human(result: Result) -> str:
    from croft.scheduler.control.doctor import doctor_text

    return doctor_text(result.data)


@click.command("doctor")
@json_option
@run_command(_human)
def command() -> Result:
    """Check the scheduler chain: registry, OS job, daemon, interpreter, serve and each project's last tick."""
    from croft.scheduler.control.doctor import doctor

    return doctor()
