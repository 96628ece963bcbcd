"""croft's assets as a Dagster code location: ``croft.dagster.definitions(project_dir)`` (the ``dagster`` extra).

For a team or a cluster that outgrows one machine's ticker, Dagster schedules, runs on Kubernetes, keeps
backfills and shows a UI, while croft stays the engine: each Dagster asset is one croft asset, with the
same inputs, and materializing it is a croft run of that asset alone, in croft's own runner, recorded in
runs.sqlite (``trigger = "dagster"``, not a person) with its row counts returned as Dagster metadata.

Held code stays held. Dagster is an unattended scheduler like croft's own, so the scheduler's rule
applies (``DueRules``' code hold over ``scheduler.due.approval_hold``, re-checked at the step's start):
code no person has run on this machine fails to materialize with SCHEDULE_HELD and the ``croft run``
that releases it. croft's scheduling setting (on, off, paused) is about croft's own ticker and holds
nothing here: Dagster's schedules are turned on and off in Dagster.

A top room of its own, beside ``cli``: nothing of croft imports it, so Dagster is never loaded on the
tick's path or by any command.
"""

# No ``from __future__ import annotations`` here: Dagster reads the ``context`` parameter's annotation as a
# type at definition time, and a string would be refused.
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg

from croft.core.problems import CroftError, Problem
from croft.engine.runner import RunOptions, run_assets
from croft.history import catalog
from croft.history.db import open_history
from croft.project.asset import AssetFacts
from croft.project.config import Project, load_project
from croft.project.discovery import discover
from croft.schedule.phrase import Schedule, parse_schedule
from croft.scheduler.control.status import status
from croft.scheduler.tick.duerules import DueRules

__all__ = ["TRIGGER", "DagsterRules", "definitions", "freshness_result", "materialize_asset"]

TRIGGER = "dagster"  # runs.trigger of a run Dagster asked for


class DagsterRules(DueRules):
    """The scheduler's rules for one materialization: only the asset Dagster named (never the stale ones
    downstream: those are Dagster assets of their own), run whatever its state, held when its code is
    not the code a person last ran. Dagster's schedules are its own: no fire of croft's is recorded."""

    selected: frozenset[str] = frozenset()

    def selectors(self, names: list[str], run_id: str | None = None) -> list[str]:
        known = super().selectors(names, None)  # an unknown name is UNKNOWN_ASSET, as for croft run
        self.selected = frozenset(known)
        return known

    def requested(self, names: list[str]) -> list[str]:
        return list(names)

    def plan_holds(self, order: list[str], run_id: str) -> list[str]:
        return super().plan_holds([name for name in order if name in self.selected], run_id)

    def _setting_hold(self) -> str | None:
        return None

    def attempt_started(self, name: str, run_id: str) -> None:
        """Nothing: the fire a croft tick records is the tick's; Dagster keeps its own."""


def materialize_asset(root: Path, name: str) -> dict[str, Any]:
    """Run ``name`` of the project at ``root`` as Dagster asks: the metadata of its materialization, or
    ``dagster.Failure`` naming croft's problem code (SCHEDULE_HELD with the command that releases it)."""
    try:
        project = load_project(root)
        options = RunOptions(
            selectors=[name],
            trigger=TRIGGER,
            human=False,
            argv=["dagster", "materialize", name],
            due_rules=DagsterRules,
        )
        result = run_assets(project, options)
    except CroftError as exc:
        raise _failure(exc.problem, name) from None
    step = next((s for s in result.data.get("steps", []) if s["asset"] == name), None)
    run_id = str(result.data.get("runId"))
    if step is None or step["status"] in ("skipped", "failed", "crashed", "interrupted"):
        raise _step_failure(name, run_id, step, result.problems)
    rows = step.get("rows") or {}
    meta: dict[str, Any] = {
        "croft/run_id": run_id,
        "croft/status": step["status"],
        "croft/rows_in": rows.get("in", 0),
        "croft/rows_added": rows.get("added", 0),
        "croft/rows_updated": rows.get("updated", 0),
        "croft/rows_deleted": rows.get("deleted", 0),
    }
    total = _table_rows(project, name)
    if total is not None:
        meta["dagster/row_count"] = total
    return meta


def _table_rows(project: Project, name: str) -> int | None:
    conn = open_history(project.config.state_dir)
    try:
        entry = catalog.all_entries(conn).get(name)
    finally:
        conn.close()
    rows = entry.get("rows") if entry else None
    return int(rows) if isinstance(rows, int) else None


def _failure(p: Problem, name: str, run_id: str | None = None) -> dg.Failure:
    text = f"{p.code}: {p.message}" + (f" ({p.hint})" if p.hint else "")
    meta: dict[str, Any] = {"croft/code": p.code}
    fix = (p.fix or {}).get("command") if isinstance(p.fix, dict) else None
    if fix:
        meta["croft/command"] = fix
    if run_id:
        meta["croft/run_id"] = run_id
    return dg.Failure(description=f"croft asset {name}: {text}", metadata=meta, allow_retries=False)


def _step_failure(name: str, run_id: str, step: dict[str, Any] | None, problems: list[Problem]) -> dg.Failure:
    if step is not None and step["status"] == "skipped":
        why = str(step.get("skippedBecause") or step.get("reason") or "skipped")
        if "SCHEDULE_HELD" in why:
            command = f"croft run {name}"
            return dg.Failure(
                description=f"croft asset {name}: SCHEDULE_HELD: {why.split(': ', 1)[-1]}. A person runs"
                f" `{command}` in the project folder to release it (`croft docs SCHEDULE_HELD`).",
                metadata={"croft/code": "SCHEDULE_HELD", "croft/command": command, "croft/run_id": run_id},
                allow_retries=False,
            )
        return dg.Failure(
            description=f"croft asset {name}: not run: {why}",
            metadata={"croft/status": "skipped", "croft/run_id": run_id},
        )
    if step is not None and step.get("error"):
        error = step["error"]
        return dg.Failure(
            description=f"croft asset {name}: {step['status']}: {error.get('code')}: {error.get('message')}."
            f" `croft logs {name} --failed` shows its log.",
            metadata={"croft/code": str(error.get("code")), "croft/run_id": run_id},
        )
    first = next((p for p in problems if p.severity == "error"), None)
    if first is not None:
        return _failure(first, name, run_id)
    return dg.Failure(description=f"croft asset {name}: the run ended without running it (run {run_id})")


def _group(root: Path) -> str:
    """The project folder's name as a Dagster group name (letters, digits and underscores)."""
    return re.sub(r"\W", "_", root.name, flags=re.ASCII) or "croft"


def _kinds(facts: AssetFacts) -> set[str]:
    return {"croft", "sqlite", "python" if facts.kind == "ingest" else "sql"}


def _asset(root: Path, facts: AssetFacts, known: set[str], group: str) -> dg.AssetsDefinition:
    name = facts.name

    @dg.asset(
        name=name,
        deps=[dg.AssetKey(i) for i in facts.inputs if i in known],
        group_name=group,
        pool=f"croft_{group}",  # one writer per project: a pool limit of 1 (docs/server.md) queues the rest
        description=facts.description or f"croft {facts.kind} {facts.rel}",
        kinds=_kinds(facts),
        metadata={"croft/file": facts.rel, "croft/project": str(root)},
        freshness_policy=(
            dg.FreshnessPolicy.time_window(fail_window=timedelta(seconds=facts.fresh_within_s))
            if facts.fresh_within_s
            else None
        ),
    )
    def materialize(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        context.log.info(f"croft run of {name} in {root}")
        return dg.MaterializeResult(metadata=materialize_asset(root, name))

    return materialize


def _freshness_check(root: Path, facts: AssetFacts) -> dg.AssetChecksDefinition:
    name = facts.name

    @dg.asset_check(
        asset=dg.AssetKey(name),
        name="croft_fresh_within",
        description=f"croft's freshness promise: data at most {facts.fresh_within_s:g} s old",
    )
    def fresh(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        return dg.AssetCheckResult(**freshness_result(root, name))

    return fresh


def freshness_result(root: Path, name: str) -> dict[str, Any]:
    """The promise as ``croft status`` judges it (``scheduler.freshness``, through ``control.status``):
    passed unless breached, with its age, window and breach instant. A run croft's own ticker made counts
    as much as one Dagster asked for."""
    try:
        look = (status(load_project(root)).data.get("freshness") or {}).get(name)
    except CroftError as exc:
        return {
            "passed": False,
            "severity": dg.AssetCheckSeverity.ERROR,
            "metadata": {"croft/code": exc.problem.code},
        }
    if not look:
        return {
            "passed": False,
            "severity": dg.AssetCheckSeverity.ERROR,
            "metadata": {"croft/promise": "none"},
        }
    meta = {
        "croft/within_seconds": float(look["withinSeconds"]),
        "croft/breached": bool(look["breached"]),
        "croft/breach_at": str(look.get("breachAt")),
    }
    if look.get("ageSeconds") is not None:
        meta["croft/age_seconds"] = float(look["ageSeconds"])
    return {"passed": not look["breached"], "severity": dg.AssetCheckSeverity.ERROR, "metadata": meta}


def _cron(facts: AssetFacts) -> Schedule | None:
    if facts.kind != "ingest" or not facts.schedule:
        return None
    parsed = parse_schedule(facts.schedule)
    return parsed if isinstance(parsed, Schedule) else None


def definitions(
    project_dir: str | os.PathLike[str] | None = None, *, start_schedules: bool = False
) -> dg.Definitions:
    """The project's assets, schedules and freshness checks for Dagster (``dagster dev -f defs.py``).

    One asset per croft asset with the same inputs; one schedule per scheduled ingest with croft's cron
    and the project's time zone, running the ingest and what reads it (as croft's scheduled run does),
    stopped until a person starts it in Dagster (``start_schedules=True``: running from the first load);
    per freshness promise, Dagster's own time-window freshness policy on the asset and an asset check
    ``croft_fresh_within`` that judges the promise by croft's rule (run with each materialization).
    """
    project = load_project(Path(project_dir) if project_dir is not None else None)
    facts, _ = discover(project)  # an asset with problems is still an asset: materializing it says why
    root = project.root
    known = set(facts)
    group = _group(root)
    tz = project.config.timezone
    assets = [_asset(root, f, known, group) for f in facts.values()]
    status = dg.DefaultScheduleStatus.RUNNING if start_schedules else dg.DefaultScheduleStatus.STOPPED
    schedules = []
    for f in facts.values():
        parsed = _cron(f)
        if parsed is None:
            continue
        schedules.append(
            dg.ScheduleDefinition(
                name=f"{f.name}_schedule",
                cron_schedule=parsed.cron,
                execution_timezone=tz,
                target=dg.AssetSelection.assets(f.name).downstream(),
                description=f"croft: {parsed.text} ({tz})",
                default_status=status,
            )
        )
    checks = [_freshness_check(root, f) for f in facts.values() if f.fresh_within_s]
    return dg.Definitions(assets=assets, schedules=schedules, asset_checks=checks)
