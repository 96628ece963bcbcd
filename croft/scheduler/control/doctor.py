"""``croft doctor``: every link of the scheduler chain, one line each, with the fix for a broken one.

registry readable -> job installed -> job loaded / cron daemon or user manager alive -> the job's
interpreter runs and imports croft -> (systemd) linger -> serve running when a project needs it ->
each registered project: present, its setting, its last tick.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from croft.core import clock
from croft.core.paths import croft_home, job_label
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.scheduler import heartbeat
from croft.scheduler.jobs import record as jobrecord
from croft.scheduler.jobs.crontab import cron_daemon_running
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.jobs.spec import interpreter_imports_croft
from croft.scheduler.setting import effective_state, read_scheduling_file
from croft.scheduler.ticklog import log_tail, tick_log_path
from croft.scheduler.user.registry import Entry, Registry, presence, project_state_dir
from croft.scheduler.user.serve import serve_alive

__all__ = ["Check", "doctor"]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


def _job_checks(entries: list[Entry], runner: Runner | None) -> list[Check]:
    from croft.scheduler.jobs import backends as jobs

    if not any(e.via == "os-job" for e in entries):
        return [Check("OS job", True, "no registered project ticks through an OS job, so none is needed")]
    record = jobrecord.read()
    if not record or record.get("label") != job_label():
        return [
            Check(
                "OS job", False, "projects need the per-user job, and none is recorded", "croft schedule on"
            )
        ]
    backend = jobs.backend(str(record["backend"]), runner)
    state = backend.inspect(job_label())
    out = [
        Check(
            "OS job",
            state.installed,
            f"{state.backend} job {state.label} at {state.location}"
            if state.installed
            else f"the {state.backend} job {state.label} is missing",
            None if state.installed else "croft schedule on",
        )
    ]
    if not state.installed:
        return out
    if state.loaded is not None:
        out.append(
            Check(
                "job loaded",
                state.loaded,
                f"{state.backend} has loaded it" if state.loaded else f"{state.backend} has not loaded it",
                None if state.loaded else "croft schedule on",
            )
        )
    if state.backend == "crontab":
        running = cron_daemon_running()
        out.append(
            Check(
                "cron daemon",
                running is not False,
                "a cron daemon is running" if running else "no cron daemon is running",
                None if running is not False else "sudo service cron start",
            )
        )
    if state.backend == "systemd":
        from croft.scheduler.jobs.systemd import linger_command, linger_warning

        why = linger_warning(runner)
        out.append(
            Check(
                "linger",
                why is None,
                why or "the user manager keeps running",
                None if why is None else linger_command(),
            )
        )
    python = state.python or str(record.get("python"))
    ok, detail = interpreter_imports_croft(python)
    out.append(Check("interpreter", ok, detail, None if ok else "croft schedule on"))
    return out


def _project_check(entry: Entry, now: Any) -> Check:
    state, why = presence(entry.root)
    name = f"project {entry.root}"
    if state != "present":
        return Check(name, state == "unknown", f"{state}: {why}", None)
    sdir = project_state_dir(entry.root)
    setting = read_scheduling_file(sdir)
    current = effective_state(setting, now)
    beat = heartbeat.last_heartbeat(sdir)
    if heartbeat.is_stale(setting, beat, now):
        return Check(
            name,
            False,
            f"on via {setting.via}, stale: last tick {beat or 'never'}",
            f"cd {entry.root} && croft schedule status",
        )
    if sys.platform == "darwin" and any(
        f"/{d}/" in entry.root + "/" for d in ("Documents", "Desktop", "Downloads")
    ):
        return Check(
            name, False, "lives in a folder macOS privacy protection hides from background jobs", None
        )
    return Check(name, True, f"{current} via {setting.via or entry.via}, last tick {beat or 'never'}")


def doctor(runner: Runner | None = None) -> Result:
    now = clock.now()
    registry = Registry()
    checks: list[Check] = []
    try:
        entries = registry.entries()
        checks.append(Check("registry", True, f"{registry.path}: {len(entries)} project(s)"))
    except CroftError as exc:
        fix = (exc.problem.fix or {}).get("command")
        checks.append(Check("registry", False, exc.problem.message, fix))
        entries = []
    checks += _job_checks(entries, runner)
    if any(e.via == "serve" for e in entries):
        alive = serve_alive()
        checks.append(
            Check(
                "croft serve",
                alive,
                "running" if alive else "projects tick from croft serve, and none runs",
                None if alive else "croft serve",
            )
        )
    checks += [_project_check(e, now) for e in entries]
    log = tick_log_path(croft_home())
    tail = log_tail(log, 5)
    ok = all(c.ok for c in checks)
    data = {"checks": [c.to_json() for c in checks], "logFile": str(log), "logTail": tail}
    return Result(data=data, ok=ok, exit=0 if ok else 1)
