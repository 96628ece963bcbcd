"""``croft schedule simulate``: the flight plan as a calendar, or JSON for tools."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import click

from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core import clock
from croft.core.clock import parse_instant
from croft.core.result import Result
from croft.core.text import for_terminal
from croft.core.zones import zone
from croft.scheduler.control.flightplan import flight_plan

__all__ = ["simulate"]


def _calendar(result: Result) -> str:
    data: dict[str, Any] = result.data
    where = zone(data["timezone"])

    def local(at: str, fmt: str = "%H:%M") -> str:
        return parse_instant(at).astimezone(where).strftime(fmt)

    head = (
        f"Flight plan {local(data['from'], '%Y-%m-%d %H:%M')} to {local(data['until'], '%Y-%m-%d %H:%M')}"
        f" ({data['timezone']}); nothing was run. At most {data['cap']} scheduled runs at once."
    )
    lines = [head]
    if data.get("scheduling") == "off":
        lines.append("Scheduling is off: this is what would run once `croft schedule on`.")
    days: dict[str, list[str]] = defaultdict(list)
    for run in data["runs"]:
        why = f"  ({'; '.join(run['why'])})" if run["why"] else ""
        days[local(run["startAt"], "%a %Y-%m-%d")].append(
            f"  {local(run['startAt'])}  {', '.join(run['assets'])}{for_terminal(why)}"
        )
    for day, rows in days.items():
        lines += [day, *rows]
    if not data["runs"]:
        lines.append("No scheduled run in this span.")
    for hold in data["holds"]:
        fires = f"; {hold['fires']} fires not run" if hold.get("fires") else ""
        lines.append(f"Held: {hold['asset']} ({hold['code']}): {for_terminal(hold['reason'])}{fires}")
    shifts: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for dst in data["dst"]:  # one line per asset and change, its walls together
        what = {
            "gap": "do not exist; they fire when the clocks have moved",
            "repeat_first": "happen twice; they fire at the first",
        }.get(dst["kind"], "happen twice; they fire at both, keeping the interval")
        walls = shifts[(dst["asset"], what, local(dst["fire"], "%Y-%m-%d"))]
        walls += [w for w in dst["walls"] if w not in walls]
    for (asset, what, day), walls in shifts.items():
        lines.append(f"Daylight saving on {day}: {asset}'s fires at {', '.join(walls)} {what}")
    for breach in data["breaches"]:
        lines.append(f"Freshness: {breach['asset']} passes its promise at {local(breach['at'], '%a %H:%M')}")
    for host, hours in sorted(data["requestsPerHostHour"].items()):
        lines.append(f"Upstream {host}: at most {max(hours.values())} runs in an hour")
    return "\n".join(lines)


@click.command("simulate")
@click.option("--days", type=float, default=7, show_default=True, help="How far ahead (1 to 31 days).")
@project_option
@json_option
@run_command(_calendar)
def simulate(days: float, project_dir: str | None) -> Result:
    """The flight plan: every scheduled run the next DAYS would start, replayed on a moved clock by the
    rules the tick decides with, with nothing run: jitter, quiet hours, pauses, holds, queue waits,
    daylight-saving shifts, predicted freshness breaches and runs per upstream host per hour.

    \b
    Examples:
      croft schedule simulate --days 2
      croft schedule simulate --json | jq '.data.runs[].startAt'
    """

    return flight_plan(load(project_dir), clock.now(), days)
