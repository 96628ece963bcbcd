"""The engine's environment knobs, read in one place so their meaning is written down once."""

from __future__ import annotations

import os

__all__ = ["lease_wait_seconds", "retry_delays"]

DEFAULT_RETRY_DELAYS = (30.0, 120.0)


def retry_delays() -> tuple[float, ...]:
    """``CROFT_RETRY_DELAYS`` (seconds, comma-separated, e.g. ``0,0``) replaces the 30 s / 2 min waits."""
    raw = os.environ.get("CROFT_RETRY_DELAYS", "").strip()
    if not raw:
        return DEFAULT_RETRY_DELAYS
    try:
        values = tuple(max(0.0, float(part)) for part in raw.split(",") if part.strip())
    except ValueError:
        return DEFAULT_RETRY_DELAYS
    return values or DEFAULT_RETRY_DELAYS


def lease_wait_seconds() -> float:
    """How long a run started by hand waits for another run's lease before ASSET_BUSY (``CROFT_LEASE_WAIT_MS``)."""
    raw = os.environ.get("CROFT_LEASE_WAIT_MS", "").strip()
    try:
        return max(0.0, int(raw) / 1000) if raw else 10.0
    except ValueError:
        return 10.0
