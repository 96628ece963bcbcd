"""No surprise runs: what the scheduler will run when it comes back, said before it happens.

Missed fires coalesce (``scheduler.due``): after ``off`` or a ``pause``, each due ingest runs once, never
a backlog. ``croft schedule status`` lists those ingests with the words the user sees before the run
("will run once at the next tick: 14 fires missed while paused"). It reads the tick's own decision
(``scheduler.tick.view.schedule_view``), so it cannot disagree with what the next tick does.
"""

from __future__ import annotations

from typing import Any

from croft.scheduler.due import MISSED_CAP

__all__ = ["catch_up", "catch_up_text"]


def catch_up_text(missed: int, state: str, cap: int | None = None) -> str:
    """The sentence for one ingest that will run once for ``missed`` fires (pure: tested by value)."""

    count = f"{MISSED_CAP} or more" if missed >= MISSED_CAP else str(missed)
    fires = "fire" if missed == 1 else "fires"
    when = {
        "paused": "when the pause ends",
        "off": "when scheduling is on again (croft schedule on)",
    }.get(state, "at the next tick")
    why = {"paused": " while paused", "off": " while off"}.get(state, "")
    return f"will run once {when}: {count} {fires} missed{why}"


def catch_up(view: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{asset, missedFires, text}]`` for each scheduled ingest due with more than one missed fire,
    or due while scheduling is off or paused, in a ``schedule_view``."""
    state = view["scheduling"]["effective"]
    out = []
    for name, asset in view["assets"].items():
        if asset["kind"] != "ingest" or not asset["due"] or not asset["schedule"]:
            continue
        missed = int(asset.get("missedFires") or 1)
        hold = asset.get("hold") or {}
        if hold.get("code") not in (None, "SCHEDULE_PAUSED"):
            continue  # held for another reason (code edited, a lease): status says that instead
        if state == "on" and missed <= 1:
            continue
        out.append({"asset": name, "missedFires": missed, "text": catch_up_text(missed, state)})
    return out
