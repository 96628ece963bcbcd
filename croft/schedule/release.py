"""When a fire is let go: the fire, plus its jitter (``jitter``), moved out of quiet hours (``quiet``).

The due policy (``scheduler.due``), the idle memo's next instant (``scheduler.tick.project_tick``), the
explain and validate views and ``croft schedule simulate`` all ask these functions, so none of them can
disagree about when a fire runs. A fire's release never comes before an earlier fire's (the jitter stays
short of the next fire and a quiet window only moves instants later), so "the latest fire released by
now" is found by stepping back from the latest fire, never by scanning a day.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from croft.schedule import cron
from croft.schedule.jitter import jitter_delay
from croft.schedule.quiet import Window, parse_windows, quiet_end, quiet_start

__all__ = ["Policy", "due_fire", "fires_after", "next_release", "release_at", "released_fires"]

_TICK = timedelta(microseconds=1)
_STEPS = 8  # fires stepped back at most: a jitter is shorter than one gap, a quiet window is skipped whole


class Policy(NamedTuple):
    """An ingest's release options as resolved (its own, else the project's)."""

    jitter_s: float | None = None
    quiet: tuple[Window, ...] = ()

    @property
    def plain(self) -> bool:
        return not self.jitter_s and not self.quiet

    @classmethod
    def resolve(
        cls,
        jitter_s: float | None,
        quiet: Sequence[str] | None,
        project_jitter_s: float | None,
        project_quiet: Sequence[str],
    ) -> Policy:
        """An ingest's own jitter and quiet hours where it sets them (None: not set), else the project's."""
        return cls(
            jitter_s if jitter_s is not None else project_jitter_s,
            parse_windows(quiet if quiet is not None else project_quiet),
        )


def release_at(name: str, spec: cron.CronSpec, tz: str, fire: datetime, policy: Policy) -> datetime:
    """The instant ``fire`` of ``name`` may start."""
    if policy.plain:
        return fire
    return _release_at(name, spec, tz, fire, policy)


@functools.lru_cache(maxsize=4096)
def _release_at(name: str, spec: cron.CronSpec, tz: str, fire: datetime, policy: Policy) -> datetime:
    """Kept per (asset, fire, policy): a pure answer each tick and every step of a flight plan asks
    again, and finding the next fire (the jitter's bound) is the costly part."""
    at = fire
    if policy.jitter_s:
        at = fire + jitter_delay(name, fire, policy.jitter_s, cron.next_fire(spec, tz, fire))
    return quiet_end(at, policy.quiet, tz)


@functools.lru_cache(maxsize=1024)
def due_fire(
    name: str, spec: cron.CronSpec, tz: str, now: datetime, policy: Policy
) -> tuple[datetime | None, datetime | None]:
    """(the latest fire released at or before ``now``, the earliest fire not released yet, if it came
    already); (None, ...) when no fire has been released in the look-back."""
    fire = cron.latest_fire_at_or_before(spec, tz, now)
    if policy.plain or fire is None:
        return fire, None
    pending = None
    start = quiet_start(now, policy.quiet, tz) if policy.quiet else None
    if start is not None and fire >= start:  # inside a window: what fired since it began waits for its end
        pending = cron.next_fire(spec, tz, start - _TICK)
        fire = cron.latest_fire_at_or_before(spec, tz, start - _TICK)
    for _ in range(_STEPS):
        if fire is None or release_at(name, spec, tz, fire, policy) <= now:
            return fire, pending
        pending = fire
        fire = cron.latest_fire_at_or_before(spec, tz, fire - _TICK)
    return fire, pending


@functools.lru_cache(maxsize=1024)
def next_release(
    name: str, spec: cron.CronSpec, tz: str, now: datetime, policy: Policy, pending: datetime | None = None
) -> datetime | None:
    """The first release after ``now``: the earliest fire not released yet (``pending``, from ``due_fire``)
    or else the next fire, with its jitter and quiet hours."""
    fire = pending or cron.next_fire(spec, tz, now)
    return None if fire is None else release_at(name, spec, tz, fire, policy)


@functools.lru_cache(maxsize=256)
def fires_after(spec: cron.CronSpec, tz: str, after: datetime, n: int) -> tuple[datetime, ...]:
    """``cron.next_fires`` kept: a held ingest counts the fires it missed since the same last fire at every
    tick, and a flight plan asks again at each step."""
    return tuple(cron.next_fires(spec, tz, after, n))


def released_fires(
    name: str, spec: cron.CronSpec, tz: str, after: datetime, until: datetime, policy: Policy
) -> list[tuple[datetime, datetime]]:
    """(fire, release) of each fire after ``after`` released by ``until``: the flight plan's calendar."""
    out: list[tuple[datetime, datetime]] = []
    fire = cron.next_fire(spec, tz, after)
    while fire is not None and fire <= until:
        out.append((fire, release_at(name, spec, tz, fire, policy)))
        fire = cron.next_fire(spec, tz, fire)
    return out
