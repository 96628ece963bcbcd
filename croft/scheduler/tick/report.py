"""What a project tick reports (``croft tick --json``'s data): one shape for the full tick and the idle one.

``{"exited": null | "off" | "paused" | "busy", "heartbeatAt", "spawned": [{runId, assets, reason}],
"held": [{asset, code, message, hint}], "tookMs"}`` is a contract scripts read. Built here only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["held", "never_fires", "tick_data"]


def tick_data(exited: str | None = None, heartbeat_at: str | None = None) -> dict[str, Any]:
    """A tick's data before it started anything: nothing spawned, nothing held."""
    return {"exited": exited, "heartbeatAt": heartbeat_at, "spawned": [], "held": [], "tookMs": 0}


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
