"""``croft schedule explain``: a schedule's cron and its next fires in a zone (the words are ``cli.schedule_text``).

Pure apart from nothing: the caller passes the zone name and the instant to start after.
"""

from __future__ import annotations

from datetime import datetime

from croft.core.problems import CroftError, Problem
from croft.core.result import Result
from croft.core.zones import zone
from croft.schedule.cron import fires_with_notes
from croft.schedule.phrase import parse_schedule
from croft.schedule.release import Policy, release_at

__all__ = ["explain_schedule"]

MAX_FIRES = 1000


def explain_schedule(
    text: str, tz: str, after: datetime, n: int = 3, asset: str | None = None, policy: Policy | None = None
) -> Result:
    """`croft schedule explain` as a Result: data {text, cron, timezone, fires (ISO, the zone's offset)};
    for an asset with a jitter or quiet hours, ``runsAt`` too: when each fire runs (``schedule.release``)."""
    if not 1 <= n <= MAX_FIRES:
        raise CroftError("USAGE", f"-n {n} is out of range", f"ask for 1 to {MAX_FIRES} fires, e.g. -n 5")
    where = zone(tz)
    parsed = parse_schedule(text)
    if isinstance(parsed, Problem):
        return Result(problems=[parsed])
    fires = fires_with_notes(parsed.spec, where, after, n)
    data = {
        "text": parsed.text,
        "cron": parsed.cron,
        "timezone": tz,
        "fires": [fire.at.astimezone(where).isoformat() for fire in fires],
    }
    if asset is not None and policy is not None and not policy.plain:
        runs = [release_at(asset, parsed.spec, tz, fire.at, policy) for fire in fires]
        data["asset"] = asset
        data["runsAt"] = [r.astimezone(where).isoformat() for r in runs]
        data["why"] = " and ".join(
            w for w, on in (("jitter", policy.jitter_s), ("quiet hours", policy.quiet)) if on
        )
    return Result(data=data)
