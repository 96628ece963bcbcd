"""``croft status [--json] [--project DIR]``: every asset's state, and what the scheduler will do with it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core import clock, when
from croft.core.clock import parse_instant
from croft.core.result import Result
from croft.scheduler.control.status import status as project_status


def _human(result: Result) -> str:
    now = clock.now()
    stale = any(p.code == "SCHEDULER_STALE" for p in result.problems)
    lines = [f"{'ASSET':<24} {'KIND':<9} {'ROWS':>7}  {'LAST LOADED':<22} {'LAST RUN':<24} STATE"]
    for a in result.data["assets"]:
        last = a["lastRun"]
        loaded = when.moment(a["lastLoadedAt"], now) if a["lastLoadedAt"] else "-"
        lines.append(
            f"{a['asset']:<24} {a['kind']:<9} {a['rows'] if a['rows'] is not None else '-':>7}  "
            f"{loaded:<22} {last_run_words(last, now):<24} {state_words(a, now, stale)}"
        )
        if last and last.get("code") and last["status"] != "running":
            lines.append(f"{'':<24} last error {last['code']}: {when.in_text(last['message'] or '', now)}")
    if result.data["running"]:
        lines.append(f"{len(result.data['running'])} run(s) in progress")
    lines += status_lines(result.data)
    return "\n".join(lines)


FAILING_SAYS_COUNT = 2  # one failure reads "failing since 09:00"; more say how many in a row


def last_run_words(last: dict[str, Any] | None, now: datetime) -> str:
    """LAST RUN: the last attempt's result and when, or the retry its run is waiting for."""
    if not last:
        return "never"
    retry = last.get("retryAt")
    if last["status"] == "failed" and retry and parse_instant(retry) > now:
        return f"retrying at {when.clock(retry, now)}"
    if last["status"] == "running":
        return "running"
    return f"{last['status']} {when.clock(last['at'], now)}"


def state_words(a: dict[str, Any], now: datetime, scheduler_stale: bool) -> str:
    """STATE: its table changed outside croft, invalid, stale and why, failing in a row, not kept fresh by
    a dead scheduler, or fresh."""
    table = a.get("table")
    if table:
        word = "table missing" if table["state"] == "missing" else f"table changed ({table.get('cause')})"
        return f"{word}: {table['code']}"
    if a["problems"]:
        return f"invalid: {a['problems'][0]['code']}"
    if a.get("waitingFor"):  # due, in the user's queue: not failing, not stale for that
        return f"waiting for {a['waitingFor']}"
    if a["stale"]:
        return "stale: " + ", ".join(r["text"] for r in a["staleReasons"])
    failing = a.get("failing")
    if failing and failing["count"] > 0:
        since = when.clock(failing["since"], now) if failing.get("since") else "?"
        if failing["count"] < FAILING_SAYS_COUNT:
            return f"failing since {since}"
        return f"failing: {failing['count']} in a row since {since}"
    sched = a.get("schedule") or {}
    if scheduler_stale and (sched.get("schedule") or a["kind"] != "ingest"):
        return "not kept fresh: the scheduler is not ticking"
    return "fresh"


@click.command("status")
@project_option
@json_option
@run_command(_human)
def command(project_dir: str | None) -> Result:
    """Every asset: kind, rows, last loaded, fresh or stale and why, and its last run's result."""
    return project_status(load(project_dir))


def status_lines(data: dict[str, Any]) -> list[str]:
    """``view_lines`` from the data ``with_schedule`` added to a status Result (for the human output)."""
    if "scheduling" not in data:
        return []
    assets = {a["asset"]: a["schedule"] for a in data.get("assets", []) if "schedule" in a}
    return view_lines({"scheduling": data["scheduling"], "assets": assets}, clock.now())


def view_lines(view: dict[str, Any], now: datetime) -> list[str]:
    """Human lines for status: the setting, then one line per scheduled, due or held asset."""
    sched = view["scheduling"]

    def words(at: str | None) -> str:
        return when.clock(at, now) if at else "-"

    head = f"Scheduling {sched['effective']}"
    if sched["effective"] == "paused" and sched.get("pausedUntil"):
        head += f" until {when.moment(sched['pausedUntil'], now)}"
    beat = sched.get("heartbeatAt")
    head += f" · last tick {when.moment(beat, now)}" if beat else " · no tick yet"
    note = when.zone_note(sched["timezone"])
    if note:
        head += f" · {note}"
    lines = [head]
    for name, a in view["assets"].items():
        if not (a["schedule"] or a["due"] or a["hold"]):
            continue
        hold = a["hold"]
        if a.get("invalid"):
            status = f"{a['invalid']['code']}: never fires (croft validate says why)"
        elif hold and hold.get("kind") == "starting":
            status = "starting"
        elif hold:
            status = f"{hold['code']}: {hold['reason']}"
        elif a["due"]:
            status = f"due: {a['dueReason']}"
        else:
            status = "-"
        missed = f" · {a['missedFires']} missed fires" if a["missedFires"] > 1 else ""
        upcoming = when.moment(a["nextFireAt"], now) if a["nextFireAt"] else "-"
        lines.append(
            f"  {name:<22} {a['schedule'] or 'after inputs'} · next {upcoming}"
            f" · last fire {words(a['lastFireAt'])}{missed} · {status}"
        )
    return lines
