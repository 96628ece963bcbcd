"""Jitter: a fire's delay in [0, jitter), the same for the same asset and fire on every machine.

Many projects (or many users of one API) with the same schedule fire at the same second; a delay spreads
them. It is a hash of the asset's name and the fire's UTC instant, never a random draw: two ticks, two
machines and ``croft schedule simulate`` agree on it, and the fire of a repeated daylight-saving hour
(two instants, one wall time) gets its own. It never reaches the next fire, so fires keep their order
and one fire's run can never slip past the next.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from croft.core.clock import to_iso

__all__ = ["jitter_delay"]

_NONE = timedelta(0)


def jitter_delay(asset: str, fire: datetime, jitter_s: float | None, next_fire: datetime | None) -> timedelta:
    """Whole seconds in [0, min(jitter, the time to the next fire)); zero without a jitter."""
    if not jitter_s:
        return _NONE
    span = jitter_s if next_fire is None else min(jitter_s, (next_fire - fire).total_seconds())
    whole = int(span)
    if whole <= 1:
        return _NONE
    digest = hashlib.blake2b(f"{asset}\0{to_iso(fire)}".encode(), digest_size=8).digest()
    return timedelta(seconds=int.from_bytes(digest, "big") % whole)
