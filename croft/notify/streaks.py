"""No alert storms: per asset, a failing streak notifies once, reminds at most daily, and recovers once.

The rule is pure (``on_failures`` / ``on_successes`` take the stored streaks and a clock and return new
ones plus what to say); ``update`` applies one of them to runs.sqlite's ``notify.streaks`` setting inside
one write transaction, so two runs ending together cannot lose each other's streaks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from croft.core.clock import from_iso, to_iso
from croft.history.db import immediate
from croft.history.state import get_setting, put_setting

__all__ = ["REMIND_EVERY", "SETTING", "on_failures", "on_successes", "read", "update"]

SETTING = "notify.streaks"
REMIND_EVERY = timedelta(days=1)

Streaks = dict[str, dict[str, Any]]
T = TypeVar("T")


def on_failures(streaks: Streaks, assets: Sequence[str], at: datetime) -> tuple[Streaks, list[str], int]:
    """Count a scheduled failure of each asset: (new streaks, the assets to notify now, longest streak).

    An asset's first failure is notified; while it keeps failing, again only once ``REMIND_EVERY`` has
    passed since it was last notified.
    """
    new = {name: dict(entry) for name, entry in streaks.items()}
    notify: list[str] = []
    for asset in dict.fromkeys(assets):
        entry = new.get(asset)
        if entry is None:
            new[asset] = {"since": to_iso(at), "count": 1, "notifiedAt": to_iso(at)}
            notify.append(asset)
            continue
        entry["count"] = int(entry.get("count") or 0) + 1
        last = _instant(entry.get("notifiedAt"))
        if last is None or at - last >= REMIND_EVERY:
            entry["notifiedAt"] = to_iso(at)
            notify.append(asset)
    longest = max((int(new[a]["count"]) for a in notify), default=0)
    return new, notify, longest


def on_successes(streaks: Streaks, assets: Sequence[str]) -> tuple[Streaks, list[tuple[str, int]]]:
    """End the streaks of assets that succeeded: (new streaks, [(asset, failures in a row)] to announce)."""
    ended = [(a, int(streaks[a].get("count") or 0)) for a in dict.fromkeys(assets) if a in streaks]
    gone = {a for a, _ in ended}
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
