"""``croft context``: the one payload a coding agent reads first, at most 20 KB.

It is ``croft status``'s Result (the same function the command and the page call, so no rule is decided
twice) made compact for an agent: each asset in a few keys (empty ones left out), the scheduling setting,
what is running, the recent failures with the end of their logs (redacted), the commands croft already
computed to fix what it found, and the ask-the-user-first list. What does not fit in the cap is left out
in a fixed order (columns, then log lines, then assets that need nothing, then the rest), and
``truncated`` says so; ``--asset NAME`` gives one asset whole.
"""

from __future__ import annotations

from typing import Any

from croft.agents.askfirst import ASK_FIRST, PERSON_RELEASES
from croft.core.envelope import dumps
from croft.core.result import Result
from croft.core.suggest import unknown_asset
from croft.engine.logs import recent_failures
from croft.engine.peek import table_columns
from croft.history.runs import FAILED_STATUSES
from croft.project.config import Project
from croft.scheduler.control.status import status
from croft.scheduler.tick.view import release_command

__all__ = ["CAP_BYTES", "context"]

CAP_BYTES = 20_000  # the whole envelope, as printed, in UTF-8 bytes
FAILURES_SHOWN = 5  # the newest failing assets whose log tails are included
TAIL_LINES = 15  # lines of each failure's log; 3 when the payload must shrink
SHORT_TAIL = 3
PROBLEMS_SHOWN = 10  # status's own problems and the fixes, when there are more (a held warning per due asset)
MESSAGE_CHARS = 300  # a last run's or hold's message, cut


def context(project: Project, asset: str | None = None) -> Result:
    """The payload for ``croft context [--asset NAME]``; ``truncated`` is true when something was left out."""
    seen = status(project)
    rows: list[dict[str, Any]] = seen.data.get("assets", [])
    names = [a["asset"] for a in rows]
    if asset is not None and asset not in names:
        raise unknown_asset(asset, names, "context --asset")
    read_by: dict[str, list[str]] = {}
    for a in rows:
        for source in a.get("reads", []):
            read_by.setdefault(source, []).append(a["asset"])
    focus = [a for a in rows if asset is None or a["asset"] == asset]
    columns = table_columns(project.config.database)
    freshness = seen.data.get("freshness", {})
    failing = [a["asset"] for a in focus if _failed(a)]
    failures = recent_failures(project, failing[:FAILURES_SHOWN], TAIL_LINES)
    assets = [_compact(a, read_by, columns, freshness) for a in focus]
    data: dict[str, Any] = {
        "project": _project(project, seen.data, len(rows), seen.problems),
        "askFirst": [{"what": what, "why": why} for what, why in ASK_FIRST],
        "heldCodeWaitsForAPerson": PERSON_RELEASES,
        "running": seen.data.get("running", []),
        "assets": assets,
        "recentFailures": [_failure(f) for f in failures],
        "fixes": _fixes(seen, focus),
        "truncated": False,
    }
    problems = [p for p in seen.problems if asset is None or p.asset in (None, asset)]
    result = Result(data=data, problems=problems, next=list(seen.next), ok=seen.ok)
    _fit(result, keep_columns=asset is not None)
    return result


def _failed(a: dict[str, Any]) -> bool:
    last = a.get("lastRun")
    return bool(last and last["status"] in FAILED_STATUSES)


def _project(project: Project, data: dict[str, Any], count: int, problems: list[Any]) -> dict[str, Any]:
    sched = data.get("scheduling") or {}
    return {
        "root": str(project.root),
        "timezone": project.config.timezone,
        "database": str(project.config.database),
        "assets": count,
        "scheduling": {
            "setting": sched.get("effective"),
            "pausedUntil": sched.get("pausedUntil"),
            "lastTickAt": sched.get("heartbeatAt"),
            "stale": any(p.code == "SCHEDULER_STALE" for p in problems),
        },
    }


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= MESSAGE_CHARS:
        return text
    return text[: MESSAGE_CHARS - 1] + "…"


def _compact(
    a: dict[str, Any],
    read_by: dict[str, list[str]],
    columns: dict[str, list[tuple[str, str]]],
    freshness: dict[str, Any],
) -> dict[str, Any]:
    """An asset in the keys an agent needs; a key whose value is empty (None, [], false) is left out."""
    sched = a.get("schedule") or {}
    hold = sched.get("hold")
    last = a.get("lastRun")
    fresh = freshness.get(a["asset"])
    out: dict[str, Any] = {
        "asset": a["asset"],
        "kind": a["kind"],
        "description": a.get("description"),
        "file": a.get("file"),
        "schedule": sched.get("schedule"),
        "nextFireAt": sched.get("nextFireAt"),
        "due": sched.get("due"),
        "hold": {
            "code": hold["code"],
            "reason": _cut(hold["reason"]),
            "release": release_command(a["asset"], hold["code"]),
        }
        if hold and hold.get("kind") != "starting"
        else None,
        "stale": [r["text"] for r in a.get("staleReasons", [])],
        "freshness": {
            "within": fresh["within"],
            "ageSeconds": fresh["ageSeconds"],
            "breached": fresh["breached"],
            "cause": (fresh.get("cause") or {}).get("text"),
        }
        if fresh
        else None,
        "rows": a.get("rows"),
        "lastLoadedAt": a.get("lastLoadedAt"),
        "lastRun": _present(
            {
                "status": last["status"],
                "at": last["at"],
                "runId": last["runId"],
                "startedBy": last.get("startedBy"),
                "code": last.get("code"),
                "message": _cut(last.get("message")),
            }
        )
        if last
        else None,
        "failingInARow": (a.get("failing") or {}).get("count"),
        "problems": [f"{p['code']}: {_cut(p['message'])}" for p in a.get("problems", [])],
        "columns": [f"{name} {kind}".strip() for name, kind in columns.get(a["asset"], [])],
        "reads": a.get("reads", []),
        "readBy": read_by.get(a["asset"], []),
    }
    return _present(out)


def _present(out: dict[str, Any]) -> dict[str, Any]:
    """The keys whose value says something: an agent reads a missing key as none (fewer bytes each)."""
    return {k: v for k, v in out.items() if v not in (None, [], {}, False)}


def _failure(step: dict[str, Any]) -> dict[str, Any]:
    error = step.get("error") or {}
    return {
        "asset": step["asset"],
        "runId": step["runId"],
        "at": step.get("finishedAt") or step["startedAt"],
        "status": step["status"],
        "startedBy": step.get("startedBy"),
        "code": error.get("code"),
        "message": _cut(error.get("message")),
        "hint": _cut(error.get("hint")),
        "logTail": step.get("lines", []),
        "logsCommand": f"croft logs {step['asset']} --failed",
    }


def _fixes(seen: Result, focus: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The commands croft already computed: each problem's fix, status's next steps, and what releases
    each hold; once each."""
    found: dict[str, str] = {}
    names = {a["asset"] for a in focus}
    for p in seen.problems:
        command = (p.fix or {}).get("command")
        if command and (p.asset is None or p.asset in names):
            found.setdefault(command, _cut(p.message) or "")
    for step in seen.next:
        found.setdefault(step.command, step.reason)
    for a in focus:
        hold = (a.get("schedule") or {}).get("hold")
        if hold and hold.get("kind") != "starting":
            found.setdefault(
                release_command(a["asset"], hold["code"]), f"releases {a['asset']}: {hold['code']}"
            )
    return [{"command": c, "reason": r} for c, r in found.items()]


def _size(result: Result) -> int:
    return len(dumps(result.envelope()).encode("utf-8"))


def _fits(result: Result) -> bool:
    return _size(result) <= CAP_BYTES


def _needs_nothing(a: dict[str, Any]) -> bool:
    return not any(k in a for k in ("hold", "stale", "problems", "failingInARow")) and not (
        (a.get("freshness") or {}).get("breached")
    )


def _fit(result: Result, keep_columns: bool) -> None:
    """Leave out what does not fit in CAP_BYTES, least useful first, and say what was left out."""
    if _fits(result):
        return
    data = result.data
    data["truncated"] = True
    left_out: dict[str, Any] = {}
    data["leftOut"] = left_out
    if not keep_columns:
        for a in data["assets"]:
            a.pop("columns", None)
        left_out["columns"] = "croft context --asset NAME lists an asset's columns"
        if _fits(result):
            return
    for f in data["recentFailures"]:
        f["logTail"] = f["logTail"][-SHORT_TAIL:]
    if len(result.problems) > PROBLEMS_SHOWN:
        left_out["problems"] = len(result.problems) - PROBLEMS_SHOWN
    result.problems = [
        p.with_(message=_cut(p.message) or "", hint=_cut(p.hint) or "", details=None)
        for p in result.problems[:PROBLEMS_SHOWN]
    ]
    if len(data["fixes"]) > PROBLEMS_SHOWN:
        left_out["fixes"] = len(data["fixes"]) - PROBLEMS_SHOWN
        data["fixes"] = data["fixes"][:PROBLEMS_SHOWN]
    if _fits(result):
        return
    quiet = [a["asset"] for a in data["assets"] if _needs_nothing(a)]
    if quiet:  # fresh, not held, not failing: named only
        data["assets"] = [a for a in data["assets"] if not _needs_nothing(a)]
        data["quietAssets"] = quiet
        left_out["quietAssets"] = "need nothing (fresh, not held, not failing): named only"
        if not _fits(result):
            data["quietAssets"] = []
            left_out["quietAssets"] = f"{len(quiet)} assets that need nothing; croft status lists them"
    for key, where in (
        ("assets", "croft status --json has every asset; croft context --asset NAME has one"),
        ("recentFailures", "croft logs --failed has them"),
        ("running", "croft logs --runs has them"),
        ("fixes", "croft status --json has the fixes"),
    ):
        _keep_first(result, key, where)
    if not _fits(result):
        left_out["problems"] = left_out.get("problems", 0) + len(result.problems)
        result.problems = []


def _keep_first(result: Result, key: str, where: str) -> None:
    """Keep the longest head of ``data[key]`` that fits (a binary search: at most a dozen measures)."""
    items = result.data[key]
    if _fits(result) or not items:
        return
    notes = result.data["leftOut"]

    def keep(count: int) -> None:  # the note is measured with the head it goes with
        result.data[key] = items[:count]
        notes[key] = {"count": len(items) - count, "where": where}

    low, high = 0, len(items)
    while low < high:
        mid = (low + high + 1) // 2
        keep(mid)
        if _fits(result):
            low = mid
        else:
            high = mid - 1
    keep(low)
