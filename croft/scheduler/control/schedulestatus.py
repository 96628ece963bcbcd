"""``croft schedule status``'s Result: the setting, the registry entry, the installed job, the last tick,
each asset's schedule and the user's queue.

Kept apart from the actions (``control.commands``: on, off, pause), which install and remove OS jobs and
wait for ticks, so the status the person types loads none of that; the actions answer with this module's
``state_data``, so both tell the setting, the job and the registry in one shape.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from croft.core import clock, knobs
from croft.core.paths import croft_home
from croft.core.problems import Problem, problem
from croft.core.result import Next, Result
from croft.engine.tablehealth import project_problems
from croft.project.config import Project
from croft.scheduler import heartbeat
from croft.scheduler.control.catchup import catch_up
from croft.scheduler.control.diagnosis import project_troubles, stale_warning, theirs_refusal, unsafe_warning
from croft.scheduler.due import AssetInfo
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.jobs.record import InstalledJob, installed_job
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling_file
from croft.scheduler.tick.freshview import add_freshness
from croft.scheduler.tick.slots import queue_json
from croft.scheduler.tick.view import asset_rows, schedule_look
from croft.scheduler.user.registry import Registry

__all__ = ["asset_rows_and_nexts", "never_fires", "schedule_status", "state_data"]


def schedule_status(project: Project, *, runner: Runner | None = None) -> Result:
    now = clock.now()
    theirs_refusal(project)  # another user's project whose state is hers: say so, not PATH_UNWRITABLE
    setting = read_scheduling_file(project.config.state_dir)
    registry = Registry()
    job = installed_job(runner)  # read once: the status shows it, and the stale warning checks it
    data = state_data("status", project, setting, registry, job, now)
    problems: list[Problem] = []
    unsafe = unsafe_warning(project, now, setting=setting)  # the setting read above, not read again
    if unsafe:
        problems.append(unsafe)
    problems += project_troubles(project, now)  # its folder, its history, a failing tick, a lost setting
    # the job, the setting and the last tick as read above, each read once
    beat = data["scheduling"]["lastTickAt"]
    warning = stale_warning(project, runner, now, job=job, setting=setting, beat=beat)
    if warning:  # an error, so exit 1 as SCHEDULER_STALE's page says; the rest of the data still reads
        problems.append(warning.with_(severity="error"))
    view, infos = schedule_look(project, now)  # one look at the files and the history for every part
    data["assets"], nexts = asset_rows_and_nexts(view)
    problems += never_fires(data["assets"])
    problems += _tables(project, data["assets"], infos)
    problems += _queue(data, view, now)
    if effective_state(setting, now) == "off":
        nexts.insert(0, Next("croft schedule on", "let the scheduler run this project's ingests"))

    return add_freshness(Result(data=data, problems=problems, next=nexts), project, now, infos)


def _queue(data: dict[str, Any], view: dict[str, Any], now: datetime) -> list[Problem]:
    """The user's queue and cap (``scheduler.tick.slots``) and what the next tick will run once after a pause
    or off (``scheduler.control.catchup``); a cap that could not be read is a warning."""

    data["queue"] = queue_json(croft_home(), now)
    data["catchUp"] = catch_up(view)
    why = data["queue"].pop("capProblem", None)
    if not why:
        return []
    knob = knobs.KNOBS["CROFT_MAX_SCHEDULED_RUNS"]
    hint = (
        f"set maxScheduledRuns in {croft_home() / 'config.json'} to a whole number from {knob.low:g}"
        f" to {knob.high:g}, or remove it (the default is 2)"
    )
    return [problem("CONFIG_INVALID", f"the cap on scheduled runs: {why}", hint, severity="warning")]


def state_data(
    action: str,
    project: Project,
    setting: Scheduling,
    registry: Registry,
    job: InstalledJob,
    now: datetime,
) -> dict[str, Any]:
    return {
        "action": action,
        "root": str(project.root),
        "timezone": project.config.timezone,
        "scheduling": _scheduling_json(project, setting, now),
        "job": None if job.state is None else job.state.to_json(),
        "registry": _registry_json(registry, project.root),
    }


def _scheduling_json(project: Project, setting: Scheduling, now: datetime) -> dict[str, Any]:
    beat = heartbeat.last_heartbeat(project.config.state_dir, now)
    out: dict[str, Any] = {
        "state": effective_state(setting, now),
        "via": setting.via,
        "since": setting.since,
        "lastTickAt": beat,
    }
    if out["state"] == "on":
        out["stale"] = heartbeat.is_stale(setting, beat, now)
    if setting.state == "paused" and out["state"] == "paused":
        out["pausedUntil"] = setting.paused_until
    return out


def _registry_json(registry: Registry, root: Path) -> dict[str, Any]:
    entries = registry.entries()
    mine = registry.find(root)
    return {
        "file": str(registry.path),
        "projects": len(entries),
        "osJob": sum(1 for e in entries if e.via == "os-job"),
        "entry": mine.to_json() if mine else None,
    }


def asset_rows_and_nexts(view: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Next]]:
    """The asset rows of a ``schedule_view`` (``tick.view.asset_rows``, the tick's own decision) and the
    commands that release what is held."""
    rows = asset_rows(view)
    releases: dict[str, str] = {}
    for r in rows:
        if r["held"] and len(releases) < 3:
            releases.setdefault(r["held"]["release"], f"release {r['asset']}: {r['held']['why']}")
    nexts = [Next(command, reason) for command, reason in releases.items()]
    if not any(r["schedule"] for r in rows):
        nexts.append(Next("croft docs assets", "no ingest has a schedule yet: add schedule=... to one"))
    return rows, nexts


def _tables(project: Project, rows: list[dict[str, Any]], infos: dict[str, AssetInfo]) -> list[Problem]:
    """Tables changed outside croft (``engine.tablehealth``), on their rows (``table``) and as problems:
    an incremental ingest whose table is gone is held even before a scheduled run has found it. The
    assets' kinds are the facts the view was decided from (cached by the files' stats)."""

    found = project_problems(project, {name: (i.kind, i.incremental) for name, i in infos.items()})
    by_asset = {p.asset: p for p in found}
    for row in rows:
        table = by_asset.get(row["asset"])
        row["table"] = None if table is None else {"code": table.code, **(table.details or {})}
    return found


def never_fires(rows: list[dict[str, Any]]) -> list[Problem]:
    """SCHEDULE_INVALID warnings for the ingests whose schedule never fires (the rows carry the tick's own)."""
    return [Problem.from_dict(r["invalid"]) for r in rows if r.get("invalid")]
