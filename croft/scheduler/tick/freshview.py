"""Where each freshness promise of a project stands now, with the cause of every breach: one read-only
look that the per-user tick's watch (``scheduler.user.freshwatch``), ``croft status``, ``croft schedule
status`` and ``croft doctor`` all take, so none of them can disagree.

It reads runs.sqlite read-only (never creating it) and the facts cache without writing it, and decides
holds by the scheduler's own policy (``scheduler.due``), so "held" here is what the tick holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from croft.core.duration import words
from croft.core.problems import Problem, problem
from croft.engine.staleness import stale_reasons
from croft.history.db import open_readonly
from croft.notify import streaks
from croft.project.config import Project
from croft.scheduler.due import due_work
from croft.scheduler.freshness import Cause, Facts, Fresh, assess, cause_of, next_breach, references
from croft.scheduler.heartbeat import is_stale, last_heartbeat
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling
from croft.scheduler.tick.factcache import load_facts
from croft.scheduler.tick.gather import due_input

if TYPE_CHECKING:
    from typing import Any

    from croft.scheduler.due import AssetInfo

__all__ = ["Standing", "add_freshness", "breach_problem", "freshness_json", "standing"]


@dataclass(slots=True)
class Standing:
    """Every promise of a project at one instant; ``causes`` for the breached ones only."""

    fresh: dict[str, Fresh] = field(default_factory=dict)
    causes: dict[str, Cause] = field(default_factory=dict)
    next_breach: str | None = None

    @property
    def breached(self) -> list[str]:
        return sorted(a for a, f in self.fresh.items() if f.breached)


def standing(project: Project, now: datetime, infos: dict[str, AssetInfo] | None = None) -> Standing:
    """The promises of ``project`` at ``now`` (empty when it makes none). ``infos``: the facts the caller
    already loaded (``croft status``'s view), so a project that promises nothing opens no runs.sqlite here."""
    if infos is not None and not any(i.fresh_within_s for i in infos.values()):
        return Standing()
    conn = open_readonly(project.config.state_dir)
    try:
        if infos is None:
            infos, _ = load_facts(conn, project, store=False)
        promises = {n: i.fresh_within_s for n, i in infos.items() if i.fresh_within_s}
        if not promises or conn is None:
            return Standing()
        setting = read_scheduling(conn)
        given = due_input(
            conn,
            infos,
            now=now,
            tz=project.config.timezone,
            setting=setting,
            next_fires=False,
            jitter_s=project.config.jitter_s,
            quiet=project.config.quiet,
        )
        going = streaks.read(conn)
    finally:
        if conn is not None:
            conn.close()
    stale = {
        name
        for name, info in infos.items()
        if info.kind != "ingest"
        and stale_reasons(
            info.kind,
            given.catalog.get(name),
            info.code_hash,
            {i: given.catalog.get(i) for i in info.inputs if i in infos},
        )
    }
    refs = references(
        {n: i.kind for n, i in infos.items()}, {n: i.inputs for n, i in infos.items()}, given.last_ok, stale
    )
    fresh = assess(promises, refs, now)
    out = Standing(fresh=fresh, next_breach=next_breach(fresh))
    if not out.breached:
        return out
    out.causes = {a: cause_of(fresh[a], _facts(project, setting, now, given, going)) for a in out.breached}
    return out


def _facts(project: Project, setting: Scheduling, now: datetime, given: Any, going: dict[str, Any]) -> Facts:
    state = effective_state(setting, now)
    beat = last_heartbeat(project.config.state_dir, now)
    work = due_work(given)
    holds = {name: (v.hold.kind, v.hold.reason) for name, v in work.views.items() if v.hold is not None}
    return Facts(
        state=state,
        paused_until=setting.paused_until if state == "paused" else None,
        no_tick_since=(beat or "it was turned on") if is_stale(setting, beat, now) else None,
        holds=holds,
        streaks={a: int(e.get("count") or 0) for a, e in going.items() if isinstance(e, dict)},
    )


def freshness_json(found: Standing) -> dict[str, Any]:
    """``data.freshness`` of status, schedule status and doctor: per promised asset, its standing and,
    when breached, the cause."""
    out: dict[str, Any] = {}
    for asset, fresh in sorted(found.fresh.items()):
        item = fresh.to_dict()
        cause = found.causes.get(asset)
        item["cause"] = cause.to_dict() if cause else None
        out[asset] = item
    return out


def breach_problem(project_name: str, asset: str, fresh: Fresh, cause: Cause) -> Problem:
    """The FRESHNESS_BREACHED problem of one asset (status, doctor and the webhook say the same)."""
    age = words(fresh.age_s or 0)
    return problem(
        "FRESHNESS_BREACHED",
        f"{asset} is older than promised: its data is {age} old (fresh within {words(fresh.within_s)}),"
        f" because {cause.text}",
        f"`{cause.fix}` is where to start; `croft docs FRESHNESS_BREACHED` lists every cause",
        severity="warning",
        asset=asset,
        fix={"command": cause.fix},
        details={"project": project_name, "cause": cause.code, **fresh.to_dict()},
    )


def add_freshness(
    result: Any, project: Project, now: datetime, infos: dict[str, AssetInfo] | None = None
) -> Any:
    """``data.freshness`` and one FRESHNESS_BREACHED warning per breached promise, on a status, schedule
    status or doctor Result; a history that cannot be read is those commands' own problem, not this.
    ``infos``: the facts the caller already loaded, as ``standing`` takes them."""
    try:
        found = standing(project, now, infos)
    except Exception:
        return result
    if not found.fresh:
        return result
    result.data["freshness"] = freshness_json(found)
    for asset in found.breached:
        result.problems.append(
            breach_problem(project.root.name, asset, found.fresh[asset], found.causes[asset])
        )
    return result
