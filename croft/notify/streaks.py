"""No alert storms: per asset, a failing streak notifies once (at its ``notify.after``-th failure in a
row), reminds every ``notify.remind`` (a day by default, or never), and recovers once (only a streak that
was told is said to have ended).

The rule is pure (``on_failures`` / ``on_successes`` take the stored streaks and a clock and return new
ones plus what to say); ``update`` applies one of them to runs.sqlite's ``notify.streaks`` setting inside
one write transaction, so two runs ending together cannot lose each other's streaks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from croft.core.clock import from_iso, to_iso
from croft.history.db import immediate
from croft.history.state import get_setting, put_setting

if TYPE_CHECKING:
    from typing import Any, TypeVar

    Streaks = dict[str, dict[str, Any]]
    T = TypeVar("T")

__all__ = ["REMIND_EVERY", "SETTING", "Rule", "on_failures", "on_successes", "read", "update"]

SETTING = "notify.streaks"
REMIND_EVERY = timedelta(days=1)

# an asset's (notify.after, notify.remind in seconds or None for never), from ``notify.policy``
Rule = Callable[[str], tuple[int, float | None]]


def _default(_asset: str) -> tuple[int, float | None]:
    return 1, REMIND_EVERY.total_seconds()


def on_failures(
    streaks: Streaks, assets: Sequence[str], at: datetime, rule: Rule = _default
) -> tuple[Streaks, list[str], int]:
    """Count a scheduled failure of each asset: (new streaks, the assets to notify now, longest streak).

    An asset is told at its ``after``-th failure in a row (``notifiedAt`` is set then, and only then);
    while it keeps failing, again once ``remind`` seconds have passed since it was last told (never when
    ``remind`` is None).
    """
    new = {name: dict(entry) for name, entry in streaks.items()}
    notify: list[str] = []
    for asset in dict.fromkeys(assets):
        after, remind = rule(asset)
        entry = new.setdefault(asset, {"since": to_iso(at), "count": 0})
        entry["count"] = int(entry.get("count") or 0) + 1
        last = _instant(entry.get("notifiedAt"))
        if last is None:
            due = entry["count"] >= after
        else:
            due = remind is not None and (at - last).total_seconds() >= remind
        if due:
            entry["notifiedAt"] = to_iso(at)
            notify.append(asset)
    longest = max((int(new[a]["count"]) for a in notify), default=0)
    return new, notify, longest


def on_successes(streaks: Streaks, assets: Sequence[str]) -> tuple[Streaks, list[tuple[str, int]]]:
    """End the streaks of assets that succeeded: (new streaks, [(asset, failures in a row)] to announce).
    A streak that never reached its ``after`` was never told, so its end is not news either."""
    done = [a for a in dict.fromkeys(assets) if a in streaks]
    ended = [(a, int(streaks[a].get("count") or 0)) for a in done if streaks[a].get("notifiedAt")]
    gone = set(done)
    return {name: entry for name, entry in streaks.items() if name not in gone}, ended


def _instant(text: Any) -> datetime | None:
    try:
        return from_iso(text) if isinstance(text, str) else None
    except ValueError:
        return None


def read(conn: sqlite3.Connection) -> Streaks:
    value = get_setting(conn, SETTING, {})
    return value if isinstance(value, dict) else {}


def update(conn: sqlite3.Connection, change: Callable[[Streaks], tuple[Streaks, T]]) -> T:
    """Read, change and write the streaks in one transaction; returns what ``change`` decided."""
    with immediate(conn, "saving the notification streaks"):
        before = read(conn)
        after, decided = change(before)
        if after != before:
            put_setting(conn, SETTING, after)
    return decided
