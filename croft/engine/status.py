"""``croft status``: every asset's kind, rows, last load, freshness and last result, from runs.sqlite only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from croft.core.clock import parse_instant
from croft.core.problems import CroftError
from croft.core.result import Next, Result
from croft.engine.reconcile import reconcile
from croft.engine.staleness import stale_reasons
from croft.engine.tablehealth import problems_for
from croft.history import catalog, runs, state
from croft.history.db import open_history
from croft.project.config import Project
from croft.project.discovery import discover
from croft.project.fingerprint import code_hash

if TYPE_CHECKING:
    from typing import Any

__all__ = ["project_status"]


def project_status(project: Project) -> Result:
    facts, problems = discover(project)
    conn = open_history(project.config.state_dir)
    try:
        reconcile(conn)
        entries = catalog.all_entries(conn)
        # tables changed behind croft's back: never "fresh" (engine.tablehealth)
        tables = problems_for(
            project.config.database,
            {name: (f.kind, bool(f.incremental)) for name, f in facts.items()},
            entries,
        )
        assets: list[dict[str, Any]] = []
        for name, f in facts.items():
            try:
                digest: str | None = code_hash(project, f)
            except CroftError:
                digest = None
            entry = entries.get(name)
            reasons = stale_reasons(
                f.kind, entry, digest, {i: entries.get(i) for i in f.inputs if i in facts}
            )
            last = runs.latest_step(conn, name)
            if last is not None:
                last["trigger"] = runs.trigger_of(conn, last["run_id"])
            count, since = runs.failing_streak(conn, name)
            sched = state.get_schedule_state(conn, name) or {}
            approved = sched.get("approved_code_hash")
            assets.append(
                {
                    "asset": name,
                    "kind": f.kind,
                    "description": f.description,
                    "file": f.rel,
                    "reads": list(f.inputs),
                    "rows": entry.get("rows") if entry else None,
                    "lastLoadedAt": entry.get("lastLoadedAt") if entry else None,
                    "stale": bool(reasons),
                    "staleReasons": [r.to_dict() for r in reasons],
                    "approved": bool(digest and approved == digest),
                    "lastRun": _last(last),
                    "failing": {"count": count, "since": since} if count else None,
                    "problems": [p.to_dict() for p in f.problems]
                    + ([tables[name].to_dict()] if name in tables else []),
                    "table": _table(tables.get(name)),
                }
            )
        running = [
            {"runId": r["id"], "pid": r["pid"], "since": r["started_at"]} for r in runs.running_runs(conn)
        ]
    finally:
        conn.close()
    problems = [*problems, *tables.values()]
    nexts = [Next(str((p.fix or {}).get("command")), "load the table again") for p in tables.values()]
    if any(a["stale"] for a in assets):
        nexts.append(Next("croft run", "build what is stale"))
    failed = [a["asset"] for a in assets if a["lastRun"] and a["lastRun"]["status"] in ("failed", "crashed")]
    nexts += [Next(f"croft logs {name} --failed", "see why its last run failed") for name in failed]
    return Result(data={"assets": assets, "running": running}, problems=problems, next=nexts, ok=True)


def _table(found: Any) -> dict[str, Any] | None:
    """An asset's table as croft last saw it beside what it wrote: None when they agree."""
    if found is None:
        return None
    return {
        "state": "missing" if found.code == "TABLE_MISSING" else "changed",
        "code": found.code,
        **found.details,
    }


def _last(step: dict[str, Any] | None) -> dict[str, Any] | None:
    if not step:
        return None
    error = step.get("error") or {}
    return {
        "runId": step["run_id"],
        "at": step.get("finished_at") or step["started_at"],
        "status": step["status"],
        "attempt": step["attempt"],
        "startedBy": runs.started_by(step.get("trigger")),
        "code": error.get("code"),
        "message": error.get("message"),
        # a failed attempt whose run waits to try again (engine.runner): the next attempt starts then
        "retryAt": (error.get("details") or {}).get("retryAt") if step["status"] == "failed" else None,
        # how long the attempt took, from its recorded start and end (None while it runs)
        "durationMs": _ms_between(step["started_at"], step.get("finished_at")),
    }


def _ms_between(start: str, end: str | None) -> int | None:
    if not end:
        return None
    return max(0, round((parse_instant(end) - parse_instant(start)).total_seconds() * 1000))
