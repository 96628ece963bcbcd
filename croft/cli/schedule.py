"""``croft schedule``: turn the scheduler on, off or paused for a project, see its status, explain a schedule.

A lazy group like croft's own (``cli.group.LazyGroup``): each action is a module of its own
(``schedule_status``, ``schedule_actions``, ``schedule_explain``, ``schedule_simulate``), loaded only
when asked for, so ``croft schedule status`` loads nothing that installs a job or replays a week.
"""

from __future__ import annotations

import click

from croft.cli.group import LazyGroup
from croft.cli.project_option import project_option
from croft.cli.render import json_option
from croft.cli.schedule_options import GROUP_KEY

__all__ = ["ACTIONS", "group"]

# action name -> "module:attribute" inside croft.cli
ACTIONS: dict[str, str] = {
    "explain": "schedule_explain:explain",
    "on": "schedule_actions:on",
    "off": "schedule_actions:off",
    "pause": "schedule_actions:pause",
    "resume": "schedule_actions:resume",
    "status": "schedule_status:status",
    "simulate": "schedule_simulate:simulate",
}

# Words people reach for; each means one of the actions.
SYNONYMS = {
    "enable": "on",
    "start": "on",
    "disable": "off",
    "stop": "off",
    "show": "status",
    "list": "status",
}


class _ScheduleGroup(LazyGroup):
    lazy = ACTIONS

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, SYNONYMS.get(cmd_name, cmd_name))


@click.group("schedule", cls=_ScheduleGroup, invoke_without_command=True)
@project_option
@json_option
@click.pass_context
def group(ctx: click.Context, project_dir: str | None, as_json: bool) -> None:
    """Turn the scheduler on, off or paused for this project; bare `croft schedule` shows its status."""
    if ctx.invoked_subcommand is None:
        status = group.get_command(ctx, "status")
        assert status is not None
        ctx.invoke(status, project_dir=project_dir, as_json=as_json)
        return
    ctx.meta[GROUP_KEY] = {"project_dir": project_dir, "as_json": as_json}
