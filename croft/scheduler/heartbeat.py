"""Is the scheduler ticking this project, and if not, why not (SCHEDULER_STALE).

The heartbeat is the ``tick`` row of runs.sqlite, written by every project tick that passes the on-check,
or the idle beat beside it that the per-user tick writes for a project whose idle check held.
Scheduling that is on and quiet for more than 3 minutes (counted from the latest of the last heartbeat,
turning on, and the end of a pause) is stale; the diagnosis walks the chain from the registry to the
job to the interpreter to the tick log and names the first broken link, with the log's tail as evidence.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from croft.core.clock import from_iso, to_iso
from croft.core.problems import Problem, problem
from croft.scheduler.setting import Scheduling, effective_state

__all__ = [
    "STALE_AFTER",
    "Cause",
    "cron_daemon_running",
    "diagnose",
    "is_stale",
    "last_heartbeat",
    "log_tail",
    "quiet_since",
    "stale_problem",
]

STALE_AFTER = timedelta(minutes=3)
TAIL_LINES = 20
TAIL_BYTES = 64 * 1024


def last_heartbeat(state_dir: Path) -> str | None:
    """The later of the tick row's heartbeat (read-only: runs.sqlite is never created here) and the idle
    beat the per-user tick writes beside it (``schedule.idlebeat``); None when there is neither."""
    from croft.scheduler.user.idlecache import read_beat

    beats = [b for b in (_row_heartbeat(Path(state_dir)), read_beat(state_dir)) if b]
    return max(beats) if beats else None


def _row_heartbeat(state_dir: Path) -> str | None:
    from croft.history.peek import peek

    rows = peek(state_dir / "runs.sqlite", "SELECT heartbeat_at FROM tick WHERE id = 1")
    row = rows[0] if rows else None
    value = row[0] if row else None
    if not isinstance(value, str):
        return None
    try:
        return to_iso(from_iso(value))
    except ValueError:
        return None


def quiet_since(setting: Scheduling, heartbeat: str | None, now: datetime) -> str | None:
    """The latest of the heartbeat, turning on, and the end of a pause that has ended."""
    marks = [m for m in (heartbeat, setting.since) if m]
    if setting.state == "paused" and setting.paused_until and setting.paused_until <= to_iso(now):
        marks.append(setting.paused_until)
    return max(marks) if marks else None


def is_stale(setting: Scheduling, heartbeat: str | None, now: datetime) -> bool:
    if effective_state(setting, now) != "on":
        return False
    quiet = quiet_since(setting, heartbeat, now)
    return quiet is None or now - from_iso(quiet) > STALE_AFTER


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


def cron_daemon_running(proc: Path = Path("/proc")) -> bool | None:
    """Whether a cron daemon process exists (None when this system has no /proc to look in)."""
    if not proc.is_dir():
        return None
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                name = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if name in ("cron", "crond", "cronie", "busybox-crond"):
                return True
    return False


@dataclass(frozen=True)
class Cause:
    cause: str
    message: str
    fix: str | None  # a command that repairs it, when croft knows one

    def fix_dict(self) -> dict[str, Any] | None:
        return (
            None
            if self.fix is None
            else {"kind": "command", "command": self.fix, "description": self.message}
        )


@dataclass(frozen=True)
class Chain:
    """What the diagnosis looks at, gathered by the caller (so the decision below stays testable)."""

    root: str
    via: str | None
    registered_via: str | None  # the registry entry's via, None when not registered
    job: dict[str, Any] | None  # JobState.to_json() of the installed job, None when no job is recorded
    serve_alive: bool
    log: list[str]
    platform: str = sys.platform
    cron_running: bool | None = None
    wsl: bool = False
    log_dir_exists: bool = True


def diagnose(chain: Chain) -> Cause:
    """The first broken link, in the order a person would check them."""
    fix_on = "croft schedule on"
    if chain.via == "serve":
        if not chain.serve_alive:
            return Cause(
                "serve_not_running",
                "this project ticks from `croft serve`, and no croft serve is running",
                "croft serve",
            )
        return Cause(
            "serve_not_ticking", "croft serve runs but has not ticked this project; see its log", None
        )
    if chain.registered_via != "os-job":
        return Cause("not_registered", "this project is not in the per-user registry of the OS job", fix_on)
    job = chain.job
    if job is None or not job.get("installed"):
        return Cause("job_missing", "the per-user scheduler job is not installed", fix_on)
    if job.get("loaded") is False:
        return Cause(
            "job_not_loaded", f"the scheduler job is installed but {job['backend']} has not loaded it", fix_on
        )
    python = job.get("python")
    if python and not os.access(python, os.X_OK):
        return Cause("interpreter_gone", f"the job runs {python}, which is gone", fix_on)
    if not chain.log_dir_exists:
        return Cause(
            "log_folder_missing",
            "the tick log's folder is gone, so the job cannot open its log and never starts croft",
            fix_on,
        )
    if job.get("backend") == "crontab" and chain.cron_running is False:
        return Cause(
            "cron_not_running",
            "no cron daemon is running, so the crontab line never runs",
            "sudo service cron start",
        )
    text = "\n".join(chain.log).lower()
    if chain.platform == "darwin" and ("operation not permitted" in text or "eperm" in text):
        folder = next((f for f in ("Documents", "Desktop", "Downloads") if f"/{f.lower()}" in text), None)
        where = f"~/{folder}" if folder else "a protected folder"
        return Cause(
            "privacy",
            f"macOS privacy protection stops the job from reading {where}: give {python or 'its interpreter'}"
            " Full Disk Access (System Settings > Privacy & Security), or keep the project elsewhere",
            None,
        )
    if "no module named croft" in text:
        return Cause(
            "croft_missing",
            f"the job's interpreter {python or ''} has no croft installed".replace("  ", " "),
            fix_on,
        )
    if "not found" in text or "no such file or directory" in text:
        return Cause(
            "interpreter_gone",
            "the job could not start its interpreter (the log says it was not found)",
            fix_on,
        )
    if chain.wsl:
        return Cause(
            "wsl",
            "this is WSL, where cron and systemd often do not run; use `croft schedule on --no-os-job` and"
            " keep `croft serve` running",
            "croft schedule on --no-os-job",
        )
    if not chain.log:
        return Cause("unknown", "the tick log is empty: the job may never have run", fix_on)
    return Cause("unknown", "croft cannot tell why; the end of the tick log is below", fix_on)


def stale_problem(
    setting: Scheduling,
    heartbeat: str | None,
    now: datetime,
    cause: Cause,
    log_file: Path,
    log: list[str],
    describe: Callable[[datetime], str] | None = None,
    waited_ms: int | None = None,
) -> Problem:
    when = describe or (lambda d: to_iso(d))
    quiet = quiet_since(setting, heartbeat, now)
    quiet_ms = None if quiet is None else int((now - from_iso(quiet)).total_seconds() * 1000)
    if waited_ms is not None:
        head = f"no scheduler tick arrived within {_span(waited_ms)} of turning scheduling on"
    elif heartbeat:
        head = (
            f"the scheduler has not ticked for {_span(quiet_ms or 0)} (last tick {when(from_iso(heartbeat))})"
        )
    elif quiet is not None:
        head = f"the scheduler has not ticked since scheduling was turned on {_span(quiet_ms or 0)} ago"
    else:
        head = "the scheduler has never ticked for this project"
    details: dict[str, Any] = {
        "cause": cause.cause,
        "via": setting.via,
        "lastTickAt": heartbeat,
        "quietForMs": quiet_ms,
        "logFile": str(log_file),
        "logTail": log,
    }
    if waited_ms is not None:
        details["waitedMs"] = waited_ms
    return problem(
        "SCHEDULER_STALE",
        f"{head}: {cause.message}",
        "Scheduled ingests do not run until it ticks again. `croft doctor` checks every link of the chain.",
        severity="warning",
        fix=cause.fix_dict(),
        details=details,
    )


def _span(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms // 1000
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h {minutes % 60} min" if hours < 48 else f"{hours // 24} days"
