"""``croft schedule explain``: a schedule's cron and its next fires in a zone (the words are ``cli.schedule_text``).

Pure apart from nothing: the caller passes the zone name and the instant to start after.
"""

from __future__ import annotations

from datetime import datetime

from croft.core.problems import CroftError, Problem
from croft.core.result import Result
from croft.schedule.cron import fires_with_notes, zone
from croft.schedule.phrase import parse_schedule

__all__ = ["explain_schedule"]

MAX_FIRES = 1000


def explain_schedule(text: str, tz: str, after: datetime, n: int = 3) -> Result:
    """`croft schedule explain` as a Result: data {text, cron, timezone, fires (ISO, the zone's offset)}."""
    if not 1 <= n <= MAX_FIRES:
        raise CroftError("USAGE", f"-n {n} is out of range", f"ask for 1 to {MAX_FIRES} fires, e.g. -n 5")
    where = zone(tz)
    parsed = parse_schedule(text)
    if isinstance(parsed, Problem):
        return Result(problems=[parsed])
    fires = fires_with_notes(parsed.spec, where, after, n)
    return Result(
        data={
            "text": parsed.text,
            "cron": parsed.cron,
            "timezone": tz,
            "fires": [fire.at.astimezone(where).isoformat() for fire in fires],
        }
    )
