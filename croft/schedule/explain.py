"""``croft schedule explain``: a schedule's cron and its next fires in a zone, with a word on each DST change.

Pure apart from nothing: the caller passes the zone name and the instant to start after.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from croft.core.problems import CroftError, Problem
from croft.core.result import Result
from croft.schedule.cron import DstNote, Fire, fires_with_notes, zone
from croft.schedule.phrase import parse_schedule

__all__ = ["explain_schedule", "explain_text", "note_text"]

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


def note_text(note: DstNote, fire_wall: str) -> str:
    """One sentence on how a DST change shaped a fire: moved out of a gap, or kept single, or kept both."""
    walls = _join(list(note.walls))
    one = len(note.walls) == 1
    day = note.day.isoformat()
    if note.kind == "gap":
        return f"{walls} {'does' if one else 'do'} not exist on {day}; fires at {fire_wall}"
    happen = "happens" if one else "happen"
    if note.kind == "repeat_first":
        return f"{walls} {happen} twice on {day}; fires at the first"
    return f"{walls} {happen} twice on {day}; fires at both, so an interval keeps its real-time spacing"


def explain_text(data: dict[str, object]) -> str:
    """Human text for explain's data: the cron, then each fire with offset, weekday and any DST note."""
    tz = str(data["timezone"])
    where = zone(tz)
    fires = [datetime.fromisoformat(str(f)) for f in data["fires"]]  # type: ignore[attr-defined]
    lines = [f"{data['text']}", f"  cron: {data['cron']}", f"  zone: {tz}"]
    if not fires:
        lines.append("  it never fires again")
        return "\n".join(lines)
    lines.append(f"  next {len(fires)} fire{'s' if len(fires) != 1 else ''}:")
    notes = _notes(str(data["cron"]), where, fires)
    for moment in fires:
        local = moment.astimezone(where)
        line = f"    {local:%a %Y-%m-%d %H:%M} {_offset(local)}"
        fire = notes.get(moment)
        if fire is not None and fire.note is not None:
            line += f"   {note_text(fire.note, f'{local:%H:%M}')}"
        lines.append(line)
    return "\n".join(lines)


def _notes(cron: str, where: tzinfo, fires: list[datetime]) -> dict[datetime, Fire]:
    found = fires_with_notes(cron, where, fires[0] - timedelta(minutes=1), len(fires))
    return {fire.at: fire for fire in found}


def _offset(local: datetime) -> str:
    text = local.isoformat()
    return "+00:00" if text.endswith("+00:00") else text[-6:]


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
