"""The scheduler's view for ``croft status``: schedule, next and last fire, missed fires, due / held /
backing off with the reason and until when, and the scheduling setting with the last heartbeat.

Read-only: runs.sqlite is opened read-only and never created; the facts cache is read but not written,
and runs earlier ticks started are settled in memory only. It runs the same decision as the tick
(``scheduler.due``), so status never disagrees with what the next tick will do.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING

from croft.core import clock
from croft.core.clock import parse_instant
from croft.core.problems import CroftError, Problem, problem
from croft.core.zones import zone
from croft.history.db import history_path, open_readonly, problem_for_sqlite_error
from croft.project.config import Project
from croft.scheduler.due import View, due_work
from croft.scheduler.heartbeat import last_heartbeat
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling
from croft.scheduler.tick.factcache import load_facts
from croft.scheduler.tick.freshview import add_freshness
from croft.scheduler.tick.gather import due_input
from croft.scheduler.tick.settle import settle

if TYPE_CHECKING:
    from typing import Any

    from croft.scheduler.due import AssetInfo

__all__ = ["asset_rows", "release_command", "schedule_look", "schedule_view", "with_schedule"]


def _local(instant: str | None, tz: str) -> str | None:
    """An instant in the project's zone, ISO-8601 with its offset."""
    if not instant:
        return None
    return parse_instant(instant).astimezone(zone(tz)).isoformat(timespec="minutes")


def schedule_view(project: Project, now: datetime) -> dict[str, Any]:
    """``{scheduling: {...}, assets: {name: {...}}}`` for status."""
    return schedule_look(project, now)[0]


def schedule_look(project: Project, now: datetime) -> tuple[dict[str, Any], dict[str, AssetInfo]]:
    """``schedule_view`` and the facts it was decided from (the views' freshness and table looks read them
    too, so the asset files are looked at once)."""

    tz = project.config.timezone
    conn = open_readonly(project.config.state_dir)
    try:
        try:
            setting = read_scheduling(conn) if conn is not None else Scheduling()
            infos, _ = load_facts(conn, project, store=False)
            settled = settle(conn, project.config.state_dir, now) if conn is not None else None
            given = due_input(
                conn,
                infos,
                now=now,
                tz=tz,
                setting=setting,
                starting=settled.starting if settled else (),
                failed_starts=settled.failed_starts if settled else (),
                rollbacks=settled.rollback_view() if settled else None,
                database=project.config.database,
                jitter_s=project.config.jitter_s,
                quiet=project.config.quiet,
            )
        except (sqlite3.Error, CroftError) as exc:
            _unless_broken(exc, project)  # a broken file is its problem; one not migrated yet reads as new
            setting = Scheduling()
            infos, _ = load_facts(None, project, store=False)
            given = due_input(
                None,
                infos,
                now=now,
                tz=tz,
                setting=setting,
                jitter_s=project.config.jitter_s,
                quiet=project.config.quiet,
            )
        work = due_work(given)
    finally:
        if conn is not None:
            conn.close()
    state = effective_state(setting, now)
    assets: dict[str, Any] = {}
    for name, view in work.views.items():
        out = view_json(view)
        # off: no fire comes (as `systemctl list-timers` shows n/a for a stopped timer)
        out["nextFireAt"] = _local(view.next_fire_at, tz) if state != "off" else None
        out["lastFireAt"] = _local(view.last_fire_at, tz)
        out["lastAttemptAt"] = _local(view.last_attempt_at, tz)
        if view.next_fire_at is None:
            out["next"] = "after inputs" if view.kind != "ingest" else "manual"
        elif state != "on":
            out["next"] = f"scheduling {state}"
        else:
            out["next"] = "schedule"
        if view.hold is not None and view.hold.until:
            out["hold"]["until"] = _local(view.hold.until, tz)
        invalid = view.invalid()
        out["invalid"] = invalid.to_dict() if invalid else None
        assets[name] = out
    found = {
        "scheduling": {
            **setting.to_json(),
            "effective": state,
            "heartbeatAt": last_heartbeat(project.config.state_dir, now),
            "timezone": tz,
        },
        "assets": assets,
    }
    return found, infos


_BROKEN = frozenset({"HISTORY_CORRUPT", "DISK_FULL", "PATH_UNWRITABLE"})


def _unless_broken(exc: BaseException, project: Project) -> None:
    """Raise the problem of a history that is broken (not a database, unreadable, a full disk); return for
    one this croft cannot read yet (an older schema status has not migrated): as if nothing happened."""
    if isinstance(exc, CroftError):
        if exc.code in _BROKEN:
            raise exc
        return
    if ((getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF) == sqlite3.SQLITE_ERROR:
        return  # no such table or column: a schema from before this croft's migrations
    path = history_path(project.config.state_dir)
    raise CroftError(problem_for_sqlite_error(exc, "reading the run history", path)) from exc


def with_schedule(result: Any, project: Project) -> Any:
    """Add the scheduler's view to a ``croft status`` Result: ``data.scheduling`` and each asset's
    ``schedule`` block."""

    now = clock.now()
    view, infos = schedule_look(project, now)
    result.data["scheduling"] = view["scheduling"]
    for asset in result.data.get("assets", []):
        block = view["assets"].get(asset["asset"])
        if block is not None:
            asset["schedule"] = {k: v for k, v in block.items() if k not in ("asset", "kind")}
            if block.get("invalid"):  # the asset's own problems: status's STATE column says "invalid"
                asset["problems"] = [*asset.get("problems", []), block["invalid"]]
    if view["scheduling"]["effective"] != "off":
        result.problems.extend(_held_warnings(view))
    result.problems.extend(
        Problem.from_dict(b["invalid"]) for b in view["assets"].values() if b.get("invalid")
    )

    return add_freshness(result, project, now, infos)  # the view's facts: not loaded a second time


def _held_warnings(view: dict[str, Any]) -> list[Any]:
    """One warning per due asset the scheduler holds, naming what releases it (scheduling on or paused)."""

    out = []
    for name, block in view["assets"].items():
        hold = block.get("hold")
        if block.get("due") and hold and hold.get("kind") != "starting":  # a starting run is no hold
            message = f"{name} is held from the scheduler: {hold['reason']}"
            out.append(problem(hold["code"], message, hold["hint"], severity="warning", asset=name))
    return out


def asset_rows(view: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows ``croft schedule on|status`` list (``{asset, kind, schedule, cron, nextFire, lastFire,
    missedFires, due, held: {code, why, release} | None}``) from a ``schedule_view``: the tick's decision."""
    rows = []
    for name, a in view["assets"].items():
        hold = a["hold"]
        if a.get("invalid"):  # never fires: shown where the holds are, with what fixes it
            invalid = a["invalid"]
            hold = {"code": invalid["code"], "reason": invalid["message"].split(": ", 1)[-1]}
        rows.append(
            {
                "asset": name,
                "kind": a["kind"],
                "schedule": a["schedule"],
                "cron": a["cron"],
                "nextFire": a["nextFireAt"],
                "lastFire": a["lastFireAt"],
                "missedFires": a["missedFires"],
                "due": a["due"],
                "held": None
                if hold is None or hold.get("kind") == "starting"
                else {
                    "code": hold["code"],
                    "why": hold["reason"],
                    "release": release_command(name, hold["code"], hold.get("kind")),
                },
                "starting": hold is not None and hold.get("kind") == "starting",
                "invalid": a.get("invalid"),
            }
        )
    return rows


def release_command(asset: str, code: str, kind: str | None = None) -> str:
    """The command that lifts a hold (or shows what holds it)."""
    if kind == "asset_paused":  # the asset alone is paused, not its project
        return f"croft schedule resume {asset}"
    if code == "SCHEDULE_INVALID":
        return "croft validate"  # shows the schedule's problem and a suggestion that parses
    if code == "SCHEDULE_PAUSED":
        return "croft schedule on"
    if code == "ASSET_BUSY":
        return "croft logs --runs"
    if code in ("TABLE_MISSING", "TABLE_CHANGED"):  # loads the table again from the source's beginning
        return f"croft run {asset} --full-refresh"
    return f"croft run {asset}"


# The view's fields under the names ``croft status --json`` and ``schedule status`` give them, in order.
_JSON_NAMES = {
    "asset": "asset",
    "kind": "kind",
    "schedule": "schedule",
    "cron": "cron",
    "next_fire_at": "nextFireAt",
    "last_fire_at": "lastFireAt",
    "last_attempt_at": "lastAttemptAt",
    "missed": "missedFires",
    "due": "due",
    "reason": "dueReason",
}


def view_json(view: View) -> dict[str, Any]:
    """An asset's row of the scheduler's view, with its hold (code, reason, until, hint) or None."""
    out = {name: getattr(view, field) for field, name in _JSON_NAMES.items()}
    hold = view.hold
    out["hold"] = (
        None
        if hold is None
        else {
            "code": hold.code,
            "kind": hold.kind,
            "reason": hold.reason,
            "until": hold.until,
            "hint": hold.hint,
        }
    )
    return out
