"""The range of every number and duration croft reads (croft.json, a decorator, a SQL header) and the
other value rules croft.json's reader shares with the assets' (reminders, URLs, pools).

Apart from ``project.rules`` (the rules an asset must pass, with a bad example of each, and the check
specs they parse), so reading croft.json, which every command does, loads none of the assets' rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from croft.core.duration import parse_seconds, words
from croft.core.text import clip

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "BOUNDS",
    "REMIND_NEVER",
    "Bound",
    "bound_problem",
    "max_runtime_problem",
    "pool_problem",
    "pool_size_problem",
    "remind_problem",
    "remind_seconds",
    "url_or_env_problem",
]


@dataclass(frozen=True)
class Bound:
    """The range of one number or duration croft reads from croft.json, a decorator or a SQL header.

    A value outside it once passed ``validate`` and then broke the run (``keepDays`` 999999 overflowed
    the prune's date arithmetic; a ``timeout`` of 1e30 seconds overflows a thread's wait), so every
    number croft reads has its range here, checked by ``validate`` and by the run alike."""

    kind: str  # "count": a whole number; "duration": seconds in a number or text ("30m", "2 days")
    low: float
    high: float
    example: str
    bare_text: bool = True  # whether a duration may be text without a unit ("600")

    def words(self) -> str:
        if self.kind == "count":
            return f"a whole number from {int(self.low)} to {int(self.high)}"
        return f"a duration from {words(self.low)} to {words(self.high)}"


BOUNDS: dict[str, Bound] = {
    "history.keepDays": Bound("count", 1, 36_500, "90"),
    "maxRuntime": Bound("duration", 1, 7 * 86_400, '"2h"'),
    "max_runtime": Bound("duration", 1, 7 * 86_400, '"30m"'),
    "timeout": Bound("duration", 0.1, 7 * 86_400, '"10m"'),
    "retries": Bound("count", 0, 20, "2"),
    "lookback": Bound("duration", 0, 3650 * 86_400, '"30 days"', bare_text=False),
    "pause": Bound("duration", 60, 365 * 86_400, '"90m"', bare_text=False),
    "pools": Bound("count", 1, 64, "1"),  # runs of one pool at once for the user: the cap's range
    # alerts (docs/notifications.md): croft.json's notify.after / notify.remind, and per asset
    "notify.after": Bound("count", 1, 1000, "3"),
    "notify.remind": Bound("duration", 60, 365 * 86_400, '"1 day"', bare_text=False),
    "fresh_within": Bound("duration", 60, 365 * 86_400, '"6h"', bare_text=False),
    # a minute at least: the per-minute tick is what notices a step past it (scheduler.tick.slow)
    "slow_after": Bound("duration", 60, 7 * 86_400, '"10m"', bare_text=False),
    # a fire's delay (croft.schedule.jitter); never past the next fire, whatever the bound
    "jitter": Bound("duration", 1, 86_400, '"5m"', bare_text=False),
}

REMIND_NEVER = 0.0  # notify.remind "never", as the seconds croft keeps (no real interval is 0: see BOUNDS)
_ENV_NAME = r"[A-Z_][A-Z0-9_]*"  # compiled (and cached by re) when a URL option is checked


def bound_problem(option: str, value: Any, *, as_json: bool = False) -> str | None:
    """Why ``value`` is no usable ``option`` (the words after the option's name in a message), or None.
    ``as_json``: the value is shown as croft.json spells it (``true``, ``"90"``), not as Python does."""
    bound = BOUNDS[option]
    shown = clip(json.dumps(value) if as_json else repr(value), 60)
    if bound.kind == "count":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be {bound.words()}, not {shown}"
        number: float = value
    else:
        seconds = parse_seconds(value, bare_text=bound.bare_text)
        if seconds is None:
            return f"is not a duration: {shown}"
        number = seconds
    if not bound.low <= number <= bound.high:
        return f"must be {bound.words()}, not {shown}"
    return None


def remind_problem(value: Any, *, as_json: bool = False) -> str | None:
    """Why ``value`` is no ``notify.remind`` (a duration, or ``"never"``), or None: croft.json, the
    decorator's ``notify_remind=`` and the SQL header ``-- notify remind:`` all ask here."""
    if value == "never":
        return None
    why = bound_problem("notify.remind", value, as_json=as_json)
    return f'{why} (or "never")' if why else None


def remind_seconds(value: Any) -> float:
    """The seconds between reminders of a valid ``notify.remind``; ``REMIND_NEVER`` for "never"."""
    if value == "never":
        return REMIND_NEVER
    return parse_seconds(value, bare_text=False) or REMIND_NEVER


def url_or_env_problem(value: Any) -> str | None:
    """Why ``value`` is neither an http(s) URL nor the name of a ``.env`` key (``notify.runPing``,
    ``run_ping=``), or None."""
    if isinstance(value, str) and (
        value.startswith(("http://", "https://")) or re.fullmatch(_ENV_NAME, value)
    ):
        return None
    shown = clip(json.dumps(value), 60)
    return f"must be an http(s) URL or the name of a .env key, not {shown}"


def max_runtime_problem(value: Any) -> str | None:
    """Why a scheduled run's ceiling (an asset's ``max_runtime``, croft.json's ``maxRuntime``) is not
    usable, or None. One rule for the decorator, the SQL header and croft.json; durations are read by the
    one duration parser."""
    return bound_problem("max_runtime", value)


_POOL_NAME = r"[a-z][a-z0-9_-]{0,39}"


def pool_problem(pool: Any, sizes: Mapping[str, int] | None = None) -> str | None:
    """Why ``pool`` is no pool an asset can name (``pool="stripe"``, ``-- pool: stripe``, a key of
    croft.json's ``pools``), or None. With ``sizes`` (croft.json's ``pools``), it must be one of them:
    the one rule ``validate``, ``run`` and the tick call."""
    if not isinstance(pool, str) or not re.fullmatch(_POOL_NAME, pool):
        shown = clip(json.dumps(pool), 60)
        return f"pool must be a name of lowercase letters, digits, - and _ (at most 40), not {shown}"
    if sizes is not None and pool not in sizes:
        return f'pool "{pool}" is not in croft.json\'s "pools"'
    return None


def pool_size_problem(size: Any) -> str | None:
    """Why a pool's size in croft.json is not usable, or None: as many of its runs at once as the cap
    allows at most."""
    return bound_problem("pools", size, as_json=True)
