"""``croft schedule on|off|pause|status``: the setting, the registry and the OS job, kept in step.

``on`` goes setting -> registry -> job; when the job cannot be installed the setting and the registry
entry are put back as they were (exit 2, INSTALL_FAILED), so a project is never "on" with nothing to
tick it. It then waits for the first heartbeat, because a job that is installed but never runs is the
failure users do not notice.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from croft.core import clock, disk, knobs
from croft.core.clock import from_iso, to_iso
from croft.core.duration import parse_seconds
from croft.core.paths import croft_home, job_label
from croft.core.private import make_dirs
from croft.core.problems import CroftError, Problem, problem
from croft.core.result import Next, Result
from croft.core.text import clip
from croft.history.db import open_history
from croft.history.state import put_setting
from croft.project.bounds import BOUNDS, bound_problem
from croft.project.config import Project
from croft.scheduler import heartbeat, incidents
from croft.scheduler.control.diagnosis import (
    no_tick_problem,
)
from croft.scheduler.control.schedulestatus import asset_rows_and_nexts, never_fires, state_data
from croft.scheduler.jobs import backends as jobs
from croft.scheduler.jobs import record as jobrecord
from croft.scheduler.jobs.base import SERVE_FALLBACK
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.jobs.record import InstalledJob, installed_backend, installed_job
from croft.scheduler.jobs.spec import at_risk_problem, interpreter_imports_croft, job_spec
from croft.scheduler.jobs.systemd import linger_command, linger_warning
from croft.scheduler.setting import (
    SETTING_KEY,
    Scheduling,
    effective_state,
    read_scheduling_file,
    write_scheduling,
)
from croft.scheduler.tick.view import schedule_view
from croft.scheduler.user.registry import Registry, Via
from croft.scheduler.user.tick_all import ticked_lately
from croft.scheduler.user.trusted import home_unsafe, project_unsafe, unsafe_error

__all__ = [
    "parse_pause_length",
    "schedule_off",
    "schedule_on",
    "schedule_pause",
]

ALREADY_TICKING = timedelta(minutes=2)
# broken links that mean the job cannot fire at all (not merely at risk, as systemd without linger is)
NO_TICK_CAN_COME = frozenset({"cron_not_running"})
Progress = Callable[[str], None]


def parse_pause_length(text: str) -> timedelta:
    """``90m``, ``1h30m``, ``2 days``, ``1.5h``: at least a minute, at most a year."""
    why = bound_problem("pause", text)
    if why:
        raise CroftError(
            "USAGE",
            f'--for "{clip(text)}" is not a pause length',
            f"It {why}. Give {BOUNDS['pause'].words()}, such as 90m, 1h30m, 2h or 2 days.",
        )
    return timedelta(seconds=parse_seconds(text, bare_text=False) or 60.0)


def _open(project: Project) -> Any:

    return open_history(project.config.state_dir)


def _write(project: Project, state: str, now: datetime, **kw: Any) -> Scheduling:

    conn = _open(project)
    try:
        return write_scheduling(conn, state, now, **kw)  # type: ignore[arg-type]
    finally:
        conn.close()


def _restore(project: Project, before: Scheduling) -> None:
    """Put the setting back exactly (``since`` included) after a failed ``on``."""

    conn = _open(project)
    try:
        put_setting(conn, SETTING_KEY, before.to_json())
    finally:
        conn.close()


def _remove_job_if_unused(registry: Registry, runner: Runner | None, used_it: bool) -> list[Problem]:
    """Remove the per-user job once no registered project ticks through it."""
    if any(e.via == "os-job" for e in registry.entries()):
        return []
    backend = installed_backend(runner)
    if backend is None:
        return []
    try:
        backend.remove(job_label())
    except CroftError as exc:
        return [exc.problem.with_(severity="warning")] if used_it else []
    jobrecord.clear()
    return []


def _wait_for_heartbeat(
    project: Project, start: datetime, wait_ms: int, progress: Progress | None
) -> int | None:
    """Milliseconds waited until a heartbeat at or after ``start`` arrived, or None on timeout."""
    began = time.monotonic()
    step = min(1.0, max(0.01, wait_ms / 20000))
    said = 0
    mark = to_iso(start)
    while True:
        beat = heartbeat.last_heartbeat(project.config.state_dir, start)
        waited = int((time.monotonic() - began) * 1000)
        if beat is not None and beat >= mark and not heartbeat.ahead_of(beat, start):
            return waited
        if waited >= wait_ms:
            return None
        if progress and waited // 10000 > said:
            said = waited // 10000
            progress(f"waiting for the first scheduler tick… {said * 10} s of {wait_ms // 1000} s")
        time.sleep(min(step, max(0.0, (wait_ms - waited) / 1000)))


def schedule_on(
    project: Project,
    *,
    no_os_job: bool = False,
    backend_name: str = "auto",
    runner: Runner | None = None,
    progress: Progress | None = None,
) -> Result:

    now = clock.now()
    root = project.root
    # the scheduler would refuse these every minute: say so now, having written nothing
    unsafe = home_unsafe(croft_home())
    if unsafe is not None:
        raise unsafe_error(unsafe)
    unsafe = project_unsafe(str(root), project.config.state_dir)
    if unsafe is not None:
        raise unsafe_error(unsafe, project=str(root))
    registry = Registry()
    wait_ms: int = knobs.value("CROFT_HEARTBEAT_WAIT_MS")
    before = read_scheduling_file(project.config.state_dir)
    before_entry = registry.find(root)
    via: Via = "serve" if no_os_job else "os-job"
    problems: list[Problem] = []
    job_changed = False
    setting = _write(project, "on", now, via=via)
    try:
        registry.add(root, via, now)
        if not no_os_job:
            spec = job_spec()
            _check_interpreter(spec.python)
            # The job's shell opens the log before croft runs: a missing folder would fail it silently.
            make_dirs(Path(spec.log).parent)
            backend = jobs.backend(backend_name, runner)
            previous = installed_backend(runner)
            job_changed = backend.install(spec)
            if previous is not None and previous.name != backend.name:
                problems += _remove_old_job(previous)  # one job per user: the other backend's goes
                job_changed = True
            jobrecord.write(
                {
                    "backend": backend.name,
                    "label": spec.label,
                    "python": spec.python,
                    "installedAt": to_iso(now),
                }
            )
            risk = at_risk_problem(spec.python)
            if risk:
                problems.append(risk)
            if backend.name == "systemd":
                why = linger_warning(runner)
                if why:
                    problems.append(
                        problem(
                            "JOB_AT_RISK",
                            why,
                            "Run the command in the fix once; it needs no restart.",
                            severity="warning",
                            fix={
                                "kind": "command",
                                "command": linger_command(),
                                "description": "keep the timer after logout",
                            },
                        )
                    )
    except (CroftError, OSError) as exc:  # all or nothing: the setting and the entry as they were
        _restore(project, before)
        with contextlib.suppress(CroftError, OSError):  # what could not be written was not changed
            registry.restore(root, before_entry)
        if isinstance(exc, OSError):
            raise CroftError(_machine(exc, "turning scheduling on")) from exc
        raise
    if no_os_job and before_entry is not None and before_entry.via == "os-job":
        problems += _remove_job_if_unused(registry, runner, used_it=True)
    first_tick: dict[str, Any] | None = None
    job: InstalledJob | None = None
    found: list[dict[str, Any]] = []
    if not no_os_job:
        # what the job needs beyond itself (a cron daemon, a user manager that keeps it): known at once,
        # so a job that cannot fire is said now instead of after the whole wait
        checked = [Link.holds("interpreter", f"{spec.python} imports croft"), *backend.health()]
        found = [link.to_json() for link in checked]
        beat = heartbeat.last_heartbeat(project.config.state_dir, now)
        fresh = (
            beat is not None and not heartbeat.ahead_of(beat, now) and now - from_iso(beat) <= ALREADY_TICKING
        )
        # a resume of a job that ticks (paused: no project beat, but the per-user tick ran) waits for nothing
        ticking = fresh or ticked_lately(str(croft_home()), ALREADY_TICKING.total_seconds())
        if before.state in ("on", "paused") and before.via == "os-job" and not job_changed and ticking:
            first_tick = {"ok": True, "alreadyTicking": True, "waitedMs": 0}
        elif any(not link.ok and link.cause in NO_TICK_CAN_COME for link in checked):
            first_tick = {"ok": False, "alreadyTicking": False, "waitedMs": 0}
            job = installed_job(runner)
            problems.append(no_tick_problem(project, setting, now, 0, job).with_(severity="error"))
        elif wait_ms == 0:  # asked not to wait (CROFT_HEARTBEAT_WAIT_MS=0): installed, and said so
            first_tick = {"ok": None, "alreadyTicking": False, "waitedMs": 0, "notWaited": True}
        else:
            waited = _wait_for_heartbeat(project, now, wait_ms, progress)
            first_tick = {"ok": waited is not None, "alreadyTicking": False, "waitedMs": waited or wait_ms}
            if waited is None:  # on, but nothing ticks it: an error (exit 1), as SCHEDULER_STALE says
                job = installed_job(runner)
                problems.append(no_tick_problem(project, setting, now, wait_ms, job).with_(severity="error"))
    nexts: list[Next] = []
    data = state_data("on", project, setting, registry, job or installed_job(runner), clock.now())
    if no_os_job:
        nexts.append(Next("croft serve", "keep it running: with --no-os-job it is what ticks this project"))
    try:
        data["assets"], more = asset_rows_and_nexts(schedule_view(project, clock.now()))
        nexts += more
        problems += never_fires(data["assets"])
    except CroftError as exc:
        data["assets"], data["assetsUnavailable"] = [], True
        problems.append(exc.problem.with_(severity="warning"))
    if first_tick is not None:
        data["firstTick"] = first_tick
        data["checked"] = found
    return Result(data=data, problems=problems, next=nexts)


def schedule_off(project: Project, *, runner: Runner | None = None) -> Result:
    now = clock.now()
    registry = Registry()
    before_entry = registry.find(project.root)
    unsafe = project_unsafe(str(project.root), project.config.state_dir)
    # the registry first, then the setting: each applies wholly or not at all (a full disk under either
    # leaves both as they were), and a minute's tick in between never reads "off" while still registered
    try:
        registry.remove(project.root)
    except OSError as exc:
        raise CroftError(_machine(exc, "turning scheduling off")) from exc
    try:
        if unsafe is not None and unsafe.theirs:
            setting = read_scheduling_file(
                project.config.state_dir
            )  # another user's: nothing written into it
        else:
            setting = _write(project, "off", now)
    except (CroftError, OSError) as exc:
        if before_entry is not None:
            with contextlib.suppress(CroftError, OSError):
                registry.restore(project.root, before_entry)
        if isinstance(exc, OSError):
            raise CroftError(_machine(exc, "turning scheduling off")) from exc
        raise
    incidents.clear(str(project.root))  # off: nothing of its scheduling is an incident any more
    with contextlib.suppress(CroftError, OSError):
        registry.prune(now)
    had_job = installed_backend(runner) is not None
    problems = _remove_job_if_unused(
        registry, runner, used_it=bool(before_entry and before_entry.via == "os-job")
    )
    job = installed_job(runner)
    data = state_data("off", project, setting, registry, job, now)
    data["jobRemoved"] = had_job and job.state is None  # else it stayed: other projects tick through it
    return Result(data=data, problems=problems)


def schedule_pause(project: Project, length: str | None, *, runner: Runner | None = None) -> Result:
    now = clock.now()
    before = read_scheduling_file(project.config.state_dir)
    if effective_state(before, now) == "off":
        raise CroftError(
            "USAGE",
            "scheduling is off for this project, so there is nothing to pause",
            "Turn it on with `croft schedule on`.",
        )
    until = now + parse_pause_length(length) if length is not None else None
    setting = _write(project, "paused", now, via=before.via, paused_until=until)
    data = state_data("pause", project, setting, Registry(), installed_job(runner), now)
    return Result(data=data, next=[Next("croft schedule on", "resume now")])


def _check_interpreter(python: str) -> None:
    """The job runs with a bare environment: refuse an interpreter that finds croft only through the shell's."""
    ok, why = interpreter_imports_croft(python)
    if not ok:
        raise CroftError(
            "INSTALL_FAILED",
            f"the scheduler job could not run croft: {why}",
            "Install croft into that interpreter (`<python> -m pip install <your croft checkout>`), or run `croft schedule on` with a croft"
            " that is installed rather than found through PYTHONPATH. Without an OS job, `croft schedule on"
            " --no-os-job` and a running `croft serve` tick this project instead.",
            fix=dict(SERVE_FALLBACK),
            details={"job": "interpreter", "python": python},
        )


def _machine(exc: OSError, what: str) -> Problem:
    """A full or read-only disk (or no permission) met while changing the setting or the registry."""

    return disk.os_problem(exc, what) or disk.cannot_open(what, str(exc.filename or ""), str(exc))


def _remove_old_job(previous: Any) -> list[Problem]:
    try:
        previous.remove(job_label())
    except CroftError as exc:
        return [exc.problem.with_(severity="warning")]
    return []
