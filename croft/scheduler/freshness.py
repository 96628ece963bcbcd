"""Freshness promises: how old an asset's data is, when it passes its ``fresh_within``, and why. Pure.

The data's age is the time since the asset last reflected its sources:

- an ingest: since its last successful step started (``unchanged`` counts: the source had nothing new);
- a transform that is up to date: the age of the oldest ingest it reads, through up-to-date transforms;
- a stale transform (an input has new data, or its code changed): since its own last success.

An asset never built has no age, so no breach: its first run starts the clock. The cause of a breach
is the first of: scheduling off, paused, no scheduler tick, the asset (or the ingest its age follows)
paused by itself (``croft schedule pause ASSET``),
held for code nobody ran, failing, waiting on another hold; otherwise its schedule did not refresh it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING

from croft.core.clock import from_iso, to_iso
from croft.core.duration import words

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Cause", "Facts", "Fresh", "assess", "cause_of", "next_breach", "references"]


@dataclass(frozen=True)
class Cause:
    """Why an asset is past its promise: a stable ``code``, a sentence, and the command that helps."""

    code: str  # scheduling_off | paused | no_tick | asset_paused | held | failing | waiting | not_refreshed
    text: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "text": self.text, "fix": self.fix}


@dataclass(frozen=True)
class Fresh:
    """One promise as it stands at ``now``."""

    asset: str
    within_s: float
    reflects: str | None  # the instant its data reflects; None: never built
    follows: str | None  # the ingest whose age a transform follows (None for an ingest, or stale)
    breach_at: str | None
    breached: bool
    age_s: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "within": words(self.within_s),
            "withinSeconds": self.within_s,
            "reflects": self.reflects,
            "ageSeconds": None if self.age_s is None else round(self.age_s),
            "follows": self.follows,
            "breachAt": self.breach_at,
            "breached": self.breached,
        }


@dataclass(frozen=True)
class Facts:
    """What the cause needs, gathered by the caller (``scheduler.tick.freshview``)."""

    state: str  # on | off | paused (effective)
    paused_until: str | None = None
    no_tick_since: str | None = None  # set when scheduling is on and the tick is stale
    holds: Mapping[str, tuple[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )  # asset -> (hold kind, reason)
    streaks: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType({})
    )  # asset -> scheduled failures in a row


def references(
    kinds: Mapping[str, str],
    inputs: Mapping[str, tuple[str, ...]],
    last_ok: Mapping[str, str],
    stale: set[str],
) -> dict[str, tuple[str | None, str | None]]:
    """Per asset: (the instant its data reflects, the ingest it follows) by the rule of the module doc."""
    out: dict[str, tuple[str | None, str | None]] = {}

    def of(name: str, seen: frozenset[str]) -> tuple[str | None, str | None]:
        if name in out:
            return out[name]
        if kinds.get(name) == "ingest" or name in stale or name in seen or not inputs.get(name):
            found: tuple[str | None, str | None] = (last_ok.get(name), None)
        else:
            found = (last_ok.get(name), None)
            oldest: tuple[str, str] | None = None
            for source in inputs[name]:
                if source not in kinds:
                    continue
                at, via = of(source, seen | {name})
                if at is None:
                    continue
                ingest = via or source
                if oldest is None or at < oldest[0]:
                    oldest = (at, ingest)
            if oldest is not None and last_ok.get(name):
                found = oldest
        out[name] = found
        return found

    for name in kinds:
        of(name, frozenset())
    return out


def assess(
    promises: Mapping[str, float],
    refs: Mapping[str, tuple[str | None, str | None]],
    now: datetime,
) -> dict[str, Fresh]:
    """Each promised asset's standing at ``now``."""
    out = {}
    for asset, within in promises.items():
        reflects, follows = refs.get(asset, (None, None))
        if reflects is None:
            out[asset] = Fresh(asset, within, None, None, None, False, None)
            continue
        at = from_iso(reflects)
        breach = at + timedelta(seconds=within)
        age = (now - at).total_seconds()
        out[asset] = Fresh(asset, within, reflects, follows, to_iso(breach), now >= breach, max(age, 0.0))
    return out


def next_breach(standing: Mapping[str, Fresh]) -> str | None:
    """The earliest breach still to come: nothing can breach before it unless the facts change."""
    coming = [f.breach_at for f in standing.values() if f.breach_at and not f.breached]
    return min(coming) if coming else None


def cause_of(fresh: Fresh, facts: Facts) -> Cause:
    """Why ``fresh`` is past its promise, by the order of the module doc."""
    if facts.state == "off":
        return Cause("scheduling_off", "scheduling is off for this project", "croft schedule on")
    if facts.state == "paused":
        until = f" until {facts.paused_until}" if facts.paused_until else ""
        return Cause("paused", f"scheduling is paused{until}", "croft schedule on")
    if facts.no_tick_since:
        return Cause("no_tick", f"the scheduler has not ticked since {facts.no_tick_since}", "croft doctor")
    chain = [fresh.asset] + ([fresh.follows] if fresh.follows else [])
    for name in chain:
        kind, reason = facts.holds.get(name, ("", ""))
        if kind == "asset_paused":
            return Cause("asset_paused", f"{name} is {reason.split(';')[0]}", f"croft schedule resume {name}")
        if kind == "SCHEDULE_HELD":
            return Cause("held", f"{name} is held: {reason}", f"croft run {name}")
    for name in chain:
        count = facts.streaks.get(name)
        if count:
            runs = "run" if count == 1 else "runs in a row"
            return Cause(
                "failing", f"{name} failed its last {count} scheduled {runs}", f"croft logs {name} --failed"
            )
    for name in chain:
        kind, reason = facts.holds.get(name, ("", ""))
        if kind:
            return Cause("waiting", f"{name} is waiting: {reason}", "croft schedule status")
    since = fresh.reflects or "its first run"
    name = fresh.follows or fresh.asset
    return Cause(
        "not_refreshed",
        f"{name} has not succeeded since {since}; its schedule may run less often than the promise",
        "croft schedule status",
    )
