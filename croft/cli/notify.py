"""``croft notify test``: a test message to every configured channel, one line per channel."""

from __future__ import annotations

import click

from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core.result import Result
from croft.notify.probe import notify_test

__all__ = ["group"]


@click.group("notify")
def group() -> None:
    """Check the channels that tell you when a scheduled run fails (croft docs notifications)."""


def _human(result: Result) -> str:
    channels = result.data.get("channels") or []
    width = max((len(c["channel"]) for c in channels), default=0)
    lines = []
    for c in channels:
        mark = "✔" if c["ok"] else "✖"
        why = "" if c["ok"] else f": {c['error']}"
        lines.append(f"{mark} {c['channel']:<{width}}  {c['target']}{why}")
    return "\n".join(lines)


@group.command("test")
@project_option
@json_option
@run_command(_human)
def test(project_dir: str | None) -> Result:
    """Send a test message to every channel croft.json configures (desktop, webhook, each of notify.urls,
    the ping and the run pings) and show how each went.

    Exits 1 when any channel failed, or when none is configured.
    """

    return notify_test(load(project_dir))
