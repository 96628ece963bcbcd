"""The engine's environment knobs, each read through the one table (``core.knobs``) so its meaning and its
bounds are written down once; a bad value is KNOB_INVALID naming the variable."""

from __future__ import annotations

from croft.core import knobs
from croft.history.runs import AGENT

__all__ = ["lease_wait_seconds", "retry_delays", "starter"]


def retry_delays() -> tuple[float, ...]:
    """``CROFT_RETRY_DELAYS`` (seconds, comma-separated, e.g. ``0,0``) replaces the 30 s / 2 min waits."""
    delays: tuple[float, ...] = knobs.value("CROFT_RETRY_DELAYS")
    return delays


def lease_wait_seconds() -> float:
    """How long a run started by hand waits for another run's lease before ASSET_BUSY (``CROFT_LEASE_WAIT_MS``)."""
    return float(knobs.value("CROFT_LEASE_WAIT_MS")) / 1000


def starter() -> tuple[str, bool]:
    """``(trigger, human)`` of a run or preview typed at a terminal: a person's, or with ``CROFT_AGENT=1``
    (set by ``croft mcp`` for every command it runs) an agent's, which does its work but approves no code
    for the scheduler: agents propose, people approve."""
    if knobs.value("CROFT_AGENT"):
        return AGENT, False
    return "manual", True
