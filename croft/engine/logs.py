"""``croft logs``: the history of attempts, newest first, or one run's whole report by its id prefix."""

from __future__ import annotations

from typing import Any

from croft.core.clock import parse_instant, to_iso
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.core.suggest import unknown_asset
from croft.engine.reconcile import reconcile
from croft.history import runs, steplogs
from croft.history.db import open_history
from croft.project.assetfiles import asset_names
from croft.project.config import Project

__all__ = ["recent_failures", "show_logs"]

TAIL_LINES = 200


def _tail(conn: Any, step: dict[str, Any], redact: Any) -> tuple[list[str], bool]:
    """The end of the attempt's log (``history.steplogs``: its row once it ended, its file before)."""
    body = steplogs.text(conn, step["run_id"], step["asset"], step["attempt"], step.get("log_path"))
    if not body:
        return [], False
    lines = body.splitlines()
    return [redact(line) for line in lines[-TAIL_LINES:]], len(lines) > TAIL_LINES


def _step(
    conn: Any, step: dict[str, Any], redact: Any, with_lines: bool, trigger: str | None = None
) -> dict[str, Any]:
    out = {
        "runId": step["run_id"],
        "trigger": trigger,
        "startedBy": runs.started_by(trigger),
        "asset": step["asset"],
        "attempt": step["attempt"],
        "status": step["status"],
        "reason": step["reason"],
        "startedAt": step["started_at"],
        "finishedAt": step["finished_at"],
        "rows": {k: step.get(k) for k in ("rows_in", "added", "updated", "unchanged", "deleted")},
        "error": step.get("error"),
        "log": step.get("log_path"),
    }
    if with_lines:
        out["lines"], out["truncated"] = _tail(conn, step, redact)
    return out


def _run(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "runId": run["id"],
        "trigger": run["trigger"],
        "scheduled": run["trigger"] == "schedule",
        "human": bool(run["human"]),
        "startedBy": runs.started_by(run["trigger"]),
        "status": run["status"],
        "startedAt": run["started_at"],
        "finishedAt": run["finished_at"],
        "argv": run["argv"],
    }


def show_logs(
    project: Project, target: str | None, *, failed: bool, runs_only: bool, since: str | None
) -> Result:
    redact = project.redactor.text
    since_iso = None
    if since:
        try:
            since_iso = to_iso(parse_instant(since))
        except ValueError as exc:
            raise CroftError(
                "USAGE", f"--since {since!r}: {exc}", "Give an ISO time such as 2026-11-30T08:00Z."
            ) from None
    conn = open_history(project.config.state_dir)
    try:
        reconcile(conn)  # a run whose process died reads "crashed" here, not "running"
        if target and target.startswith("r_"):
            run = runs.get_run(conn, target)
            if run is None:
                raise CroftError(
                    "USAGE", f"no run id starts with {target!r}", "`croft logs --runs` lists runs."
                )
            steps = list(reversed(runs.list_steps(conn, run_id=run["id"], limit=1000)))
            data = {
                "mode": "run",
                "run": {**_run(run), "summary": run.get("summary")},
                "steps": [_step(conn, s, redact, True, run["trigger"]) for s in steps],
            }
            return Result(data=project.redactor.obj(data), ok=True)
        asset = target
        if runs_only:
            found = runs.list_runs(conn, asset=asset, failed=failed, since=since_iso, limit=20)
            out = []
            for run in found:
                in_order = reversed(runs.list_steps(conn, run_id=run["id"], limit=1000))  # as they ran
                out.append(
                    {**_run(run), "steps": [_step(conn, s, redact, False, run["trigger"]) for s in in_order]}
                )
            return Result(data=project.redactor.obj({"mode": "runs", "runs": out}), ok=True)
        steps = runs.list_steps(conn, asset=asset, failed=failed, since=since_iso, limit=50)
        if asset and not steps:
            _require_asset(project, conn, asset)
        triggers = {s["run_id"]: (runs.get_run(conn, s["run_id"]) or {}).get("trigger") for s in steps}
        data = {
            "mode": "steps",
            "steps": [_step(conn, s, redact, True, triggers[s["run_id"]]) for s in steps],
        }
        return Result(data=project.redactor.obj(data), ok=True)
    finally:
        conn.close()


def _require_asset(project: Project, conn: Any, asset: str) -> None:
    """A name with no history must at least be an asset: a typo is UNKNOWN_ASSET, not "no history yet"."""

    names = asset_names(project.root)
    if asset in names or runs.list_steps(conn, asset=asset, limit=1):
        return
    raise unknown_asset(asset, names, "logs")


def recent_failures(project: Project, assets: list[str], lines: int) -> list[dict[str, Any]]:
    """The last failed attempt of each of ``assets`` (newest first), each with the last ``lines`` lines of
    its log, redacted as ``croft logs`` redacts them (``croft context`` shows these)."""
    if not assets:
        return []
    redact = project.redactor.text
    conn = open_history(project.config.state_dir)
    try:
        found = []
        for asset in assets:
            steps = runs.list_steps(conn, asset=asset, failed=True, limit=1)
            if steps:
                trigger = (runs.get_run(conn, steps[0]["run_id"]) or {}).get("trigger")
                step = _step(conn, steps[0], redact, True, trigger)
                step["lines"] = step["lines"][-lines:] if lines else []
                found.append(step)
    finally:
        conn.close()
    found.sort(key=lambda s: s["startedAt"] or "", reverse=True)
    return [project.redactor.obj(s) for s in found]
