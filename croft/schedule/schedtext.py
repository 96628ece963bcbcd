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
