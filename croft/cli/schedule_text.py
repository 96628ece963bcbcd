"""Human text for ``croft schedule on|off|pause|status`` (the JSON is the data itself)."""

from __future__ import annotations

from typing import Any

__all__ = ["schedule_text"]


def schedule_text(data: dict[str, Any]) -> str:
    if not data:
        return ""
    s = data["scheduling"]
    lines = []
    state = s["state"]
    if data["action"] == "pause" or state == "paused":
        until = s.get("pausedUntil")
        lines.append(
            f"Scheduling is paused for {data['root']} until {until} ; `croft schedule on` resumes it now."
            if until
            else f"Scheduling is paused for {data['root']} until `croft schedule on`."
        )
    elif state == "on":
        how = "croft serve" if s["via"] == "serve" else "the per-user OS job"
        lines.append(f"Scheduling is on for {data['root']}, ticked by {how}.")
    else:
        lines.append(f"Scheduling is off for {data['root']}.")
    job = data.get("job")
    if job:
        loaded = (
            {True: "loaded", False: "NOT loaded", None: "installed"}[job["loaded"]]
            if job["installed"]
            else "MISSING"
        )
        lines.append(f"Job: {job['backend']} {job['label']} ({loaded}), running {job['python']}")
    tick = data.get("firstTick")
    if tick:
        lines.append(
            "First tick: already ticking"
            if tick.get("alreadyTicking")
            else (
                f"First tick arrived after {tick['waitedMs'] / 1000:.1f} s"
                if tick["ok"]
                else "No tick arrived yet"
            )
        )
    last = s.get("lastTickAt")
    stale = " (STALE)" if s.get("stale") else ""
    lines.append(f"Last tick: {last or 'never'}{stale}")
    lines += _queue_lines(data)
    assets = data.get("assets") or []
    if assets:
        lines.append("")
        lines.append(f"{'ASSET':<22} {'SCHEDULE':<20} {'CRON':<14} {'NEXT FIRE':<25} {'LAST FIRE':<25} STATE")
        for a in assets:
            state_text = "due" if a["due"] else "-"
            if a["held"]:
                state_text = f"held: {a['held']['why']} (release: {a['held']['release']})"
            elif a["missedFires"] > 1:
                state_text = f"due ({a['missedFires']} missed fires run once)"
            lines.append(
                f"{a['asset']:<22} {a['schedule'] or '-':<20} {a['cron'] or '-':<14} {a['nextFire'] or '-':<25}"
                f" {a['lastFire'] or 'never':<25} {state_text}"
            )
    return "\n".join(lines)


def _queue_lines(data: dict[str, Any]) -> list[str]:
    """The user's queue under the cap on scheduled runs, and what runs once when the scheduler is back."""
    queue = data.get("queue")
    lines = []
    if queue:
        lines.append(f"Queue: {queue['text']} (at most {queue['cap']} at once for this user)")
        for w in queue["waiting"][:10]:
            lines.append(f"  {', '.join(w['assets'])} in {w['root']}: fire {w['since']} ago")
    for c in data.get("catchUp") or []:
        lines.append(f"{c['asset']}: {c['text']}")
    return lines
