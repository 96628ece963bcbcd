"""``croft schedule status``: the setting, the OS job, the last tick and each asset's schedule (the bare
``croft schedule`` too). Its own module, so showing the status loads none of the actions."""

from __future__ import annotations

import click

from croft.cli.project_option import load
from croft.cli.schedule_options import project_action, state_human
from croft.core.result import Result
from croft.scheduler.control.schedulestatus import schedule_status

__all__ = ["status"]


@click.command("status")
@project_action(state_human)
def status(project_dir: str | None) -> Result:
    """The setting, the OS job, the last tick (and whether it is stale), and each asset's schedule."""

    return schedule_status(load(project_dir))
