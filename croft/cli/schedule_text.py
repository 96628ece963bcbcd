"""Human text for ``croft schedule explain|on|off|pause|status`` (the JSON is the data itself)."""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo
from typing import Any

from croft.core import clock, when
from croft.core.zones import zone
from croft.schedule.cron import DstNote, Fire, fires_with_notes

__all__ = ["explain_text", "note_text", "schedule_text"]


def schedule_text(data: dict[str, Any]) -> str:
    if not data:
        return ""
    now = clock.now()
    s = data["scheduling"]
    lines = []
    state = s["state"]
    if data["action"] == "pause" or state == "paused":
        until = s.get("pausedUntil")
        lines.append(
            f"Scheduling is paused for {data['root']} until {when.moment(until, now)}."
            if until
            else f"Scheduling is paused for {data['root']} until `croft schedule on`."
        )
    elif state == "on":
        how = "croft serve" if s["via"] == "serve" else "the per-user OS job"
        lines.append(f"Scheduling is on for {data['root']}, ticked by {how}.")
    else:
        lines.append(f"Scheduling is off for {data['root']}.")
    lines += _job_lines(data)
    for c in data.get("checked") or []:
        lines.append(f"{'✔' if c['ok'] else '✖'} {c['check']}: {c['detail']}")
    tick = data.get("firstTick")
    if tick:
        if tick.get("alreadyTicking"):
            lines.append("First tick: already ticking")
        elif tick.get("notWaited"):
            lines.append(
                "First tick: not waited for (CROFT_HEARTBEAT_WAIT_MS=0); the job is installed, and"
                " `croft schedule status` shows its last tick"
            )
        elif tick["ok"]:
            lines.append(f"First tick arrived after {tick['waitedMs'] / 1000:.1f} s")
        elif tick["waitedMs"] == 0 and any(not c["ok"] for c in data.get("checked") or []):
            lines.append("No tick can come until the check marked ✖ holds; croft did not wait for one")
        else:
            lines.append(f"No tick arrived within {tick['waitedMs'] / 1000:.0f} s")
    last = s.get("lastTickAt")
    stale = " (STALE)" if s.get("stale") else ""
    lines.append(f"Last tick: {when.moment(last, now) if last else 'never'}{stale}")
    lines += _queue_lines(data)
    assets = data.get("assets") or []
    off = state == "off"
    if assets:
        lines.append("")
        lines.append(f"{'ASSET':<22} {'SCHEDULE':<20} {'CRON':<14} {'NEXT FIRE':<22} {'LAST FIRE':<12} STATE")
        for a in assets:
            upcoming = (
                when.moment(a["nextFire"], now) if a["nextFire"] else "n/a" if off and a["cron"] else "-"
            )
            fired = when.clock(a["lastFire"], now) if a["lastFire"] else "never"
            lines.append(
                f"{a['asset']:<22} {a['schedule'] or '-':<20} {a['cron'] or '-':<14} {upcoming:<22}"
                f" {fired:<12} {_asset_state(a)}"
            )
    note = when.zone_note(data.get("timezone") or "")
    if note and data.get("timezone"):
        lines.append(f"({note}; the project's zone is {data['timezone']})")
    return "\n".join(lines)


def _asset_state(a: dict[str, Any]) -> str:
    """STATE: starting, held and why (the command that releases it named once), due, or nothing."""
    if a.get("starting"):
        return "starting"
    held = a["held"]
    if held:
        release = held["release"]
        said = release in held["why"]
        return f"held: {held['why']}" + ("" if said else f" (release: {release})")
    if a["missedFires"] > 1:
        return f"due ({a['missedFires']} missed fires run once)"
    return "due" if a["due"] else "-"


def _job_lines(data: dict[str, Any]) -> list[str]:
    """The OS job and, after ``off``, whether it stayed for other projects or went."""
    job = data.get("job")
    lines = []
    if job:
        loaded = (
            {True: "loaded", False: "NOT loaded", None: "installed"}[job["loaded"]]
            if job["installed"]
            else "MISSING"
        )
        lines.append(f"Job: {job['backend']} {job['label']} ({loaded}), running {job['python']}")
    if data["action"] == "off":
        removed = data.get("jobRemoved")
        others = (data.get("registry") or {}).get("osJob") or 0
        if removed:
            lines.append("The OS job was removed: no other project needs it.")
        elif job and job.get("installed"):
            them = "project needs" if others == 1 else "projects need"
            lines.append(f"The OS job stays: {others} other {them} it.")
    return lines


def _queue_lines(data: dict[str, Any]) -> list[str]:
    """The user's queue under the cap on scheduled runs, and what runs once when the scheduler is back."""
    queue = data.get("queue")
    lines = []
    if queue:
        lines.append(f"Queue: {queue['text']} (at most {queue['cap']} at once for this user)")
        for w in queue["waiting"][:10]:
            waits = w.get("waitingFor") or "a slot"
            lines.append(
                f"  {', '.join(w['assets'])} in {w['root']}: waiting for {waits}, fire {w['since']} ago"
            )
    for c in data.get("catchUp") or []:
        lines.append(f"{c['asset']}: {c['text']}")
    return lines


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
    found = data.get("runsAt")
    runs: list[str | None] = list(found) if isinstance(found, list) else [None] * len(fires)
    for moment, run in zip(fires, runs, strict=True):
        local = moment.astimezone(where)
        line = f"    {local:%a %Y-%m-%d %H:%M} {_offset(local)}"
        fire = notes.get(moment)
        if fire is not None and fire.note is not None:
            line += f"   {note_text(fire.note, f'{local:%H:%M}')}"
        if run is not None and run != local.isoformat():
            line += f"   runs {datetime.fromisoformat(run):%a %H:%M:%S} ({data.get('why') or 'jitter'})"
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
