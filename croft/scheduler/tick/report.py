"""What a project tick reports (``croft tick --json``'s data): one shape for the full tick and the idle one.

``{"path": "idle" | "full", "exited": null | "off" | "paused" | "busy", "heartbeatAt", "spawned":
[{runId, assets, reason}], "held": [{asset, code, message, hint}], "tookMs"}`` is a contract scripts read.
Built here only. ``path`` says which tick answered: ``"idle"``, the idle memo held
(``scheduler.tick.memo``) and only the heartbeat was written; ``"full"``, the project tick ran.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Literal

__all__ = ["held", "never_fires", "tick_data", "tick_text"]

_EXITED = {
    "off": "scheduling is off for this project",
    "paused": "scheduling is paused for this project",
    "busy": "another tick of this project is running",
}


def tick_data(path: Literal["idle", "full"]) -> dict[str, Any]:
    """A tick's data before it started anything: nothing spawned, nothing held; ``path``, which tick it is."""
    return {"path": path, "exited": None, "heartbeatAt": None, "spawned": [], "held": [], "tookMs": 0}


def tick_text(data: dict[str, Any]) -> str:
    """A tick's data in the words ``croft tick`` prints and the tick log keeps."""
    if data.get("exited"):
        return f"tick: nothing to do: {_EXITED.get(data['exited'], data['exited'])}"
    started = [f"started {s['runId']} ({', '.join(s['assets'])})" for s in data["spawned"]]
    lines = [f"tick: {'; '.join(started) or 'nothing due'} ({data['tookMs']} ms)"]
    lines += [f"  held {h['asset']} ({h['code']}): {h['message'].split(': ', 1)[-1]}" for h in data["held"]]
    return "\n".join(lines)


def held(asset: str, code: str, message: str, hint: str) -> dict[str, str]:
    """One entry of ``held``: an asset the tick did not start, the problem code and what releases it."""
    return {"asset": asset, "code": code, "message": message, "hint": hint}


def never_fires(work: Any) -> list[dict[str, str]]:
    """``held`` entries (SCHEDULE_INVALID) for the ingests of a due decision (``scheduler.due.DueWork``)
    whose schedule the schedule language refuses: they never fire, and the tick says so each minute."""
    out = []
    for view in work.views.values():
        warning = view.invalid()
        if warning is not None:
            out.append(held(view.asset, warning.code, warning.message, warning.hint))
    return out
