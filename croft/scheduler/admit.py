"""Which waiting scheduled runs may start now: the cap and the pools, in fire order. Pure.

Every due group of the user waits in one order: oldest fire first, then project folder, then group. A
group starts when a slot of the cap is free and, for each pool its assets name, a slot of that pool is
free. A group whose pool is full waits ("waiting for pool stripe") without taking a cap slot, so the
groups behind it that need no such pool go ahead; within a pool, the oldest fire goes first. The tick
(``scheduler.tick.slots``) decides with this function over the live slots it counted, and ``croft
schedule simulate`` can ask it the same question about runs that have not happened.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Admission", "Waiting", "admit", "free_slots"]


@dataclass(frozen=True, order=True)
class Waiting:
    """A due group that would start: its fire (ISO instant), project folder, group key (assets joined
    by commas) and the pools its assets name."""

    fire: str
    root: str
    group: str
    pools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Admission:
    """What ``admit`` decided: the groups that start, in order, and why each other one waits
    (``"cap"`` or ``"pool <name>"``)."""

    start: tuple[Waiting, ...] = ()
    waits: Mapping[Waiting, str] = field(default_factory=dict)


def free_slots(
    cap: int, sizes: Mapping[str, int], holding: Sequence[Sequence[str]]
) -> tuple[int, dict[str, int]]:
    """(free cap slots, free slots per pool) when the runs alive are ``holding`` (each run's pools)."""
    held = Counter(pool for pools in holding for pool in set(pools))
    return max(0, cap - len(holding)), {pool: max(0, size - held[pool]) for pool, size in sizes.items()}


def admit(waiting: Sequence[Waiting], cap_free: int, pool_free: Mapping[str, int]) -> Admission:
    """Walk ``waiting`` in fire order; start each group while a cap slot and a slot of each of its pools
    are free (a pool with no size known has none)."""
    room = cap_free
    free = dict(pool_free)
    start: list[Waiting] = []
    waits: dict[Waiting, str] = {}
    for group in sorted(waiting):
        full = [pool for pool in sorted(set(group.pools)) if free.get(pool, 0) <= 0]
        if full:
            waits[group] = f"pool {full[0]}"
        elif room <= 0:
            waits[group] = "cap"
        else:
            room -= 1
            for pool in set(group.pools):
                free[pool] -= 1
            start.append(group)
    return Admission(tuple(start), waits)
