"""Why the scheduler is quiet: the chain from the registry to the job to the interpreter to the tick log.

SCHEDULER_STALE (``croft status``, ``croft schedule status``, ``croft schedule on``'s wait) names the
first broken link of the chain a person would check, in that order, with the tick log's tail as
evidence. ``diagnose`` decides from facts gathered by the caller, so each cause is tested by value.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.clock import from_iso, to_iso
from croft.core.duration import words
from croft.core.paths import croft_home
from croft.core.problems import CroftError, Problem, problem
from croft.project.config import Project
from croft.scheduler import heartbeat
from croft.scheduler.heartbeat import quiet_since
from croft.scheduler.jobs.crontab import cron_daemon_running
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.jobs.record import installed_job
from croft.scheduler.setting import Scheduling, read_scheduling_file
from croft.scheduler.ticklog import log_tail, tick_log_path
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.serve import serve_alive

__all__ = ["Cause", "Chain", "diagnose", "diagnosis", "no_tick_problem", "stale_problem", "stale_warning"]


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
        head = f"no scheduler tick arrived within {words(waited_ms / 1000)} of turning scheduling on"
    elif heartbeat:
        head = f"the scheduler has not ticked for {words((quiet_ms or 0) / 1000)} (last tick {when(from_iso(heartbeat))})"
    elif quiet is not None:
        head = (
            f"the scheduler has not ticked since scheduling was turned on {words((quiet_ms or 0) / 1000)} ago"
        )
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


def _describe(project: Project) -> Callable[[datetime], str]:
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(project.config.timezone)
    return lambda moment: moment.astimezone(tz).isoformat(timespec="seconds")


def diagnosis(
    project: Project, setting: Scheduling, runner: Runner | None = None
) -> tuple[Cause, Path, list[str]]:
    """The likely cause of silence, and the log it read."""
    root = str(project.root)
    registry = Registry()
    try:
        entry = registry.find(root)
    except CroftError:
        entry = None
    log_file = tick_log_path(croft_home())
    lines = log_tail(log_file)
    state = installed_job(runner) if setting.via != "serve" else None
    try:
        wsl = "microsoft" in Path("/proc/version").read_text().lower()
    except OSError:
        wsl = False
    chain = Chain(
        root=root,
        via=setting.via,
        registered_via=entry.via if entry else None,
        job=state.to_json() if state else None,
        serve_alive=serve_alive(),
        log=lines,
        platform=sys.platform,
        cron_running=cron_daemon_running() if state and state.backend == "crontab" else None,
        wsl=wsl,
        log_dir_exists=log_file.parent.is_dir(),
    )
    return diagnose(chain), log_file, lines


def stale_warning(
    project: Project, runner: Runner | None = None, now: datetime | None = None
) -> Problem | None:
    """SCHEDULER_STALE for ``croft status`` / ``schedule status`` / doctor, or None when all is well."""
    now = now or clock.now()
    setting = read_scheduling_file(project.config.state_dir)
    beat = heartbeat.last_heartbeat(project.config.state_dir)
    if not heartbeat.is_stale(setting, beat, now):
        return None
    cause, log_file, lines = diagnosis(project, setting, runner)
    return stale_problem(setting, beat, now, cause, log_file, lines, _describe(project))


def no_tick_problem(
    project: Project, setting: Scheduling, started: datetime, waited_ms: int, runner: Runner | None = None
) -> Problem:
    """SCHEDULER_STALE for ``croft schedule on`` when no tick came within its wait."""
    cause, log_file, lines = diagnosis(project, setting, runner)
    return stale_problem(
        setting, None, started, cause, log_file, lines, _describe(project), waited_ms=waited_ms
    )
