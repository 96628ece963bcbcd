"""An asset's state as the page marks it, decided in ONE place from croft's own JSON.

``croft status --json`` says it all per asset: the last run (its status, a waiting retry in
``lastRun.retryAt``), the failing streak (``failing``), the schedule block's hold (a person's hold,
a backoff, a starting run) and what makes it stale; the user's queue says who waits for a slot.
:func:`derived_state` only orders them (the first that applies wins), so the overview, the asset's
page, the lineage graph and the timeline all mark an asset alike, and as the terminal does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from croft.core.clock import parse_instant
from croft.core.duration import words
from croft.core.when import moment
from croft.scheduler.tick.view import release_command

__all__ = ["FAILED", "derived_state", "duration_s", "held_of", "states_of"]

FAILED = frozenset({"failed", "crashed", "interrupted"})
# holds a person must act on; the others (a pause, a busy lease, a backoff) pass on their own
_NEEDS_A_PERSON = frozenset({"SCHEDULE_HELD", "LARGE_REPROCESS", "SCHEDULE_INVALID"})
_HELD_WORDS = {
    "SCHEDULE_HELD": "held: code not yet run by a person",
    "LARGE_REPROCESS": "held: it would reprocess a large table",
    "SCHEDULE_INVALID": "held: its schedule cannot be read",
}


def duration_s(step: dict[str, Any], now: datetime) -> float | None:
    """How long a step took, or has taken so far while it runs."""
    if not step.get("startedAt"):
        return None
    end = parse_instant(step["finishedAt"]) if step.get("finishedAt") else now
    return max(0.0, (end - parse_instant(step["startedAt"])).total_seconds())


def held_of(asset: dict[str, Any]) -> dict[str, Any] | None:
    """The hold a person must release, from the asset's schedule block: ``{code, why, release}``."""
    hold = (asset.get("schedule") or {}).get("hold") or {}
    if hold.get("code") not in _NEEDS_A_PERSON or hold.get("kind") == "starting":
        return None
    return {
        "code": hold["code"],
        "why": hold.get("reason"),
        "release": release_command(asset["asset"], hold["code"]),
    }


# an asset's problem that is not about its code, in the row's words (its fix, when it has one, is the command)
_PROBLEM_WORDS = {"TABLE_MISSING": "table missing", "TABLE_CHANGED": "table changed"}


def derived_state(
    asset: dict[str, Any], waiting: list[dict[str, Any]], root: str, now: datetime
) -> dict[str, Any]:
    """``{mark, label, detail, command}`` for one asset.

    ``asset`` is the asset's entry of ``croft status --json`` data and ``waiting`` the queue's waiting
    groups. The first that applies wins: running, invalid, held for a person, waiting for a slot,
    retrying at, failed (with its streak), skipped (its input did not build), stale, ok, never run.
    """
    last = asset.get("lastRun") or {}
    sched = asset.get("schedule") or {}
    hold = sched.get("hold") or {}
    name = asset.get("asset")

    def state(mark: str, label: str, detail: str | None = None, command: str | None = None) -> dict[str, Any]:
        return {"mark": mark, "label": label, "detail": detail, "command": command}

    if last.get("status") == "running":
        return state("running", f"running {words(duration_s({'startedAt': last['at']}, now) or 0)}")
    if hold.get("kind") == "starting":  # its run is on its way: not a hold, nothing to release
        return state("running", "starting")
    held = held_of(asset)
    if asset.get("problems") and not (held and held["code"] == "SCHEDULE_INVALID"):
        first = asset["problems"][0]
        label = _PROBLEM_WORDS.get(first.get("code"), "invalid")
        return state("invalid", label, first.get("message"), first.get("fix") or "croft validate")
    if held:
        return state("held", _HELD_WORDS[held["code"]], held.get("why"), held.get("release"))
    found = [w for w in waiting if w.get("root") == root and name in w.get("assets", [])]
    if found:
        waits = found[0].get("waitingFor") or "a slot"
        why = (
            "every slot of the per-user cap is taken"
            if waits == "a slot"
            else f"every slot of {waits} is taken"
        )
        return state("waiting", f"waiting for {waits}", why)
    if last.get("retryAt"):
        return state("retrying", f"retrying at {moment(last['retryAt'], now)}", last.get("message"))
    if hold.get("code") == "SCHEDULE_BACKOFF" and hold.get("until"):
        return state("retrying", f"retrying at {moment(hold['until'], now)}", hold.get("reason"))
    if last.get("status") in FAILED:
        streak = (asset.get("failing") or {}).get("count") or 1
        times = "once" if streak == 1 else f"{streak} times in a row"
        return state(
            "failed", f"{last['status']} {times}", last.get("message"), f"croft logs {name} --failed"
        )
    if last.get("status") == "skipped":
        why = last.get("message") or "an input it reads did not build"
        return state("skipped", "skipped", why, f"croft run {name}")
    if asset.get("stale"):
        why = ", ".join(r.get("text", "") for r in asset.get("staleReasons", []))
        return state("stale", "stale", why or None, f"croft run {name}")
    if last:
        return state("ok", "ok" if last.get("status") in ("ok", "unchanged", None) else str(last["status"]))
    return state("never", "never run", None, f"croft run {name}")


def states_of(
    project: dict[str, Any], queue: dict[str, Any] | None, now: datetime
) -> dict[str, dict[str, Any]]:
    """Every asset's state in one project look (``snapshot.project_json``)."""
    waiting = (queue or {}).get("waiting") or []
    assets = (project["status"].get("data") or {}).get("assets") or []
    return {a["asset"]: derived_state(a, waiting, project["root"], now) for a in assets}
