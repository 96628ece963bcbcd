"""An asset's state as the page marks it, decided in ONE place from croft's own JSON.

``croft status --json`` says the failing streak (``failing``), a waiting retry (``lastRun.retryAt``) and a
starting run (the schedule block's hold of kind ``starting``); the queue of ``croft schedule status``
says who waits for a slot. :func:`derived_state` only orders them (the first that applies wins), so the
page and the terminal read the same facts; nothing else on the page decides a state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from croft.core.clock import parse_instant
from croft.core.duration import words
from croft.core.when import moment

__all__ = ["FAILED", "asset_steps", "derived_state", "duration_s"]

FAILED = frozenset({"failed", "crashed", "interrupted"})
# holds a person must act on; the others (a pause, a busy lease, a backoff) pass on their own
_NEEDS_A_PERSON = frozenset({"SCHEDULE_HELD", "LARGE_REPROCESS", "SCHEDULE_INVALID"})


def duration_s(step: dict[str, Any], now: datetime) -> float | None:
    """How long a step took, or has taken so far while it runs."""
    if not step.get("startedAt"):
        return None
    end = parse_instant(step["finishedAt"]) if step.get("finishedAt") else now
    return max(0.0, (end - parse_instant(step["startedAt"])).total_seconds())


def asset_steps(runs: list[dict[str, Any]], asset: str) -> list[dict[str, Any]]:
    """The asset's own steps from ``croft logs ASSET --runs`` data (runs newest first), newest first:
    one per run, its last attempt, since that is the result the run ended with."""
    out = []
    for run in runs:
        mine = [s for s in run.get("steps", []) if s.get("asset") == asset]
        if mine:
            out.append({**mine[-1], "trigger": run.get("trigger")})
    return out


def _streak(steps: list[dict[str, Any]]) -> int:
    count = 0
    for step in steps:
        if step.get("status") not in FAILED:
            break
        count += 1
    return count


def derived_state(
    asset: dict[str, Any],
    held: dict[str, Any] | None,
    steps: list[dict[str, Any]],
    waiting: list[dict[str, Any]],
    root: str,
    now: datetime,
) -> dict[str, Any]:
    """``{mark, label, detail, command}`` for one row.

    ``asset`` is the asset's entry of ``croft status --json`` data, ``held`` its ``held`` block of
    ``croft schedule status --json``, ``steps`` its own steps newest first (:func:`asset_steps`), and
    ``waiting`` the queue's waiting groups. The first that applies wins: running, invalid, held for a
    person, waiting for a slot, retrying at, failed (with its streak), stale, ok, never run.
    """
    last = asset.get("lastRun") or {}
    sched = asset.get("schedule") or {}
    hold = sched.get("hold") or {}

    def state(mark: str, label: str, detail: str | None = None, command: str | None = None) -> dict[str, Any]:
        return {"mark": mark, "label": label, "detail": detail, "command": command}

    if last.get("status") == "running":
        return state("running", f"running {words(duration_s({'startedAt': last['at']}, now) or 0)}")
    if hold.get("kind") == "starting":  # its run is on its way: not a hold, nothing to release
        return state("running", "starting")
    if asset.get("problems"):
        first = asset["problems"][0]
        return state("invalid", f"invalid: {first['code']}", first.get("message"), "croft validate")
    if held and held.get("code") in _NEEDS_A_PERSON:
        return state("held", f"held: {held['code']}", held.get("why"), held.get("release"))
    name = asset.get("asset")
    if any(w.get("root") == root and name in w.get("assets", []) for w in waiting):
        return state("waiting", "waiting for a slot", "every slot of the per-user cap is taken")
    if last.get("retryAt"):
        return state("retrying", f"retrying at {moment(last['retryAt'], now)}", last.get("message"))
    if hold.get("code") == "SCHEDULE_BACKOFF" and hold.get("until"):
        return state("retrying", f"retrying at {moment(hold['until'], now)}", hold.get("reason"))
    if last.get("status") in FAILED:
        streak = (asset.get("failing") or {}).get("count") or _streak(steps) or 1
        times = "once" if streak == 1 else f"{streak} times in a row"
        detail = f"{last.get('code') or last['status']}: {last.get('message') or ''}".rstrip(": ")
        return state("failed", f"{last['status']} {times}", detail, f"croft logs {name} --failed")
    if asset.get("stale"):
        why = ", ".join(r.get("text", "") for r in asset.get("staleReasons", []))
        return state("stale", "stale", why or None, f"croft run {name}")
    if last:
        return state("ok", last.get("status") or "ok")
    return state("never", "never run", None, f"croft run {name}")
