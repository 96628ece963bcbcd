"""``croft status``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core.result import Result


def _human(result: Result) -> str:
    lines = [f"{'ASSET':<24} {'KIND':<9} {'ROWS':>7}  {'LAST LOADED':<27} {'LAST RUN':<11} STATE"]
    for a in result.data["assets"]:
        last = a["lastRun"]
        state = "stale: " + ", ".join(r["text"] for r in a["staleReasons"]) if a["stale"] else "fresh"
        if a["problems"]:
            state = f"invalid: {a['problems'][0]['code']}"
        lines.append(
            f"{a['asset']:<24} {a['kind']:<9} {a['rows'] if a['rows'] is not None else '-':>7}  "
            f"{a['lastLoadedAt'] or '-':<27} {(last['status'] if last else 'never'):<11} {state}"
        )
        if last and last.get("code"):
            lines.append(f"{'':<24} last error {last['code']}: {last['message']}")
    if result.data["running"]:
        lines.append(f"{len(result.data['running'])} run(s) in progress")
    lines += status_lines(result.data)
    return "\n".join(lines)


@click.command("status")
@project_option
@json_option
@run_command(_human)
def command(project_dir: str | None) -> Result:
    """Every asset: kind, rows, last loaded, fresh or stale and why, and its last run's result."""
    from croft.scheduler.control.status import status

    return status(load(project_dir))


def status_lines(data: dict[str, Any]) -> list[str]:
    """``view_lines`` from the data ``with_schedule`` added to a status Result (for the human output)."""
    from croft.core import clock

    if "scheduling" not in data:
        return []
    assets = {a["asset"]: a["schedule"] for a in data.get("assets", []) if "schedule" in a}
    return view_lines({"scheduling": data["scheduling"], "assets": assets}, clock.now())


def view_lines(view: dict[str, Any], now: datetime) -> list[str]:
    """Human lines for status: the setting, then one line per scheduled, due or held asset."""
    from croft.scheduler.due import clock_words

    sched = view["scheduling"]
    tz = sched["timezone"]

    def words(at: str | None) -> str:
        return clock_words(at, now, tz) if at else "-"

    head = f"Scheduling {sched['effective']}"
    if sched["effective"] == "paused" and sched.get("pausedUntil"):
        head += f" until {words(sched['pausedUntil'])}"
    head += f" · last tick {words(sched['heartbeatAt'])}" if sched.get("heartbeatAt") else " · no tick yet"
    lines = [head]
    for name, a in view["assets"].items():
        if not (a["schedule"] or a["due"] or a["hold"]):
            continue
        if a.get("invalid"):
            status = f"{a['invalid']['code']}: never fires (croft validate says why)"
        elif a["hold"]:
            until = f" (until {words(a['hold']['until'])})" if a["hold"].get("until") else ""
            status = f"{a['hold']['code']}: {a['hold']['reason']}{until}"
        elif a["due"]:
            status = f"due: {a['dueReason']}"
        else:
            status = "-"
        missed = f" · {a['missedFires']} missed fires" if a["missedFires"] > 1 else ""
        lines.append(
            f"  {name:<22} {a['schedule'] or 'after inputs'} · next {words(a['nextFireAt'])}"
            f" · last fire {words(a['lastFireAt'])}{missed} · {status}"
        )
    return lines
