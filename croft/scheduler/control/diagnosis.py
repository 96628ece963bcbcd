"""Why the scheduler is quiet, as SCHEDULER_STALE: the first broken link of the project's chain.

``croft status``, ``croft schedule status`` and ``croft schedule on``'s wait raise it. The chain is the
one ``croft doctor`` shows (``chain.links``), so the warning names the link doctor marks first, in
doctor's words, with the tick log's tail as evidence. It is gathered only once scheduling is stale (or no
tick came), because gathering starts processes and ``croft status`` must stay cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from croft.core import clock
from croft.core.clock import from_iso, to_iso
from croft.core.duration import words
from croft.core.paths import croft_home
from croft.core.problems import CroftError, Problem, problem
from croft.project.config import Project
from croft.scheduler import heartbeat
from croft.scheduler.control.chain import UNSAFE, diagnose, links
from croft.scheduler.control.gather import permissions_chain, project_chain
from croft.scheduler.control.troubles import Look, look
from croft.scheduler.heartbeat import ahead_of, quiet_since
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling_file
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.trusted import home_unsafe, project_unsafe, unsafe_error, unsafe_problem

if TYPE_CHECKING:
    from typing import Any

    from croft.scheduler.jobs.health import Link
    from croft.scheduler.jobs.oscmd import Runner
    from croft.scheduler.jobs.record import InstalledJob

__all__ = [
    "no_tick_problem",
    "project_look",
    "project_troubles",
    "stale_problem",
    "stale_warning",
    "theirs_refusal",
    "unsafe_warning",
]


class Unread:
    """The default of ``stale_warning``'s ``beat``: not read yet (None is an answer, "no tick ever")."""


UNREAD = Unread()


def stale_problem(
    setting: Scheduling,
    heartbeat: str | None,
    now: datetime,
    link: Link,
    log_file: Path,
    log: list[str],
    describe: Callable[[datetime], str] | None = None,
    waited_ms: int | None = None,
) -> Problem:
    """SCHEDULER_STALE: how long it has been quiet, then the broken link in doctor's words."""
    when = describe or (lambda d: to_iso(d))
    quiet = quiet_since(setting, heartbeat, now)
    quiet_ms = None if quiet is None else int((now - from_iso(quiet)).total_seconds() * 1000)
    if waited_ms == 0:  # schedule on found the broken link before waiting (a job that cannot fire)
        head = "no scheduler tick can come yet"
    elif waited_ms is not None:
        head = f"no scheduler tick arrived within {words(waited_ms / 1000)} of turning scheduling on"
    elif quiet is not None and ahead_of(quiet, now):
        head = (
            f"the scheduler was last heard of at {when(from_iso(quiet))},"
            f" {words(-(quiet_ms or 0) / 1000)} ahead of the clock"
        )
    elif heartbeat and ahead_of(heartbeat, now):
        quiet_for = f"for {words((quiet_ms or 0) / 1000)}" if quiet is not None else "at all"
        head = (
            f"the scheduler has not ticked {quiet_for}: its last tick is stamped {when(from_iso(heartbeat))},"
            " ahead of the clock (the clock moved backwards, or CROFT_NOW was set ahead), which counts for"
            " nothing"
        )
    elif heartbeat:
        head = f"the scheduler has not ticked for {words((quiet_ms or 0) / 1000)} (last tick {when(from_iso(heartbeat))})"
    elif quiet is not None:
        head = (
            f"the scheduler has not ticked since scheduling was turned on {words((quiet_ms or 0) / 1000)} ago"
        )
    else:
        head = "the scheduler has never ticked for this project"
    details: dict[str, Any] = {
        "cause": link.cause,
        "check": link.check,
        "via": setting.via,
        "lastTickAt": heartbeat,
        "quietForMs": quiet_ms,
        "logFile": str(log_file),
        "logTail": log,
    }
    if waited_ms is not None:
        details["waitedMs"] = waited_ms
    fix = None if link.fix is None else {"kind": "command", "command": link.fix, "description": link.detail}
    return problem(
        "SCHEDULER_STALE",
        f"{head}: {link.detail}",
        "Scheduled ingests do not run until it ticks again. `croft doctor` checks every link of the chain.",
        severity="warning",
        fix=fix,
        details=details,
    )


def _describe(project: Project) -> Callable[[datetime], str]:

    tz = ZoneInfo(project.config.timezone)
    return lambda moment: moment.astimezone(tz).isoformat(timespec="seconds")


def _problem(
    project: Project,
    setting: Scheduling,
    beat: str | None,
    now: datetime,
    runner: Runner | None,
    job: InstalledJob | None,
    waited_ms: int | None = None,
) -> Problem:
    chain = project_chain(project, setting, now, runner=runner, job=job)
    return stale_problem(
        setting,
        beat,
        now,
        diagnose(chain),
        Path(chain.log_file),
        list(chain.log),
        _describe(project),
        waited_ms=waited_ms,
    )


def stale_warning(
    project: Project,
    runner: Runner | None = None,
    now: datetime | None = None,
    *,
    job: InstalledJob | None = None,
    setting: Scheduling | None = None,
    beat: str | Unread | None = UNREAD,
) -> Problem | None:
    """SCHEDULER_STALE for ``croft status`` / ``schedule status``, or None when all is well (``job``,
    ``setting``, ``beat``: the answers the command already read, so each is read once)."""
    now = now or clock.now()
    if setting is None:
        setting = read_scheduling_file(project.config.state_dir)
    if isinstance(beat, Unread):
        beat = heartbeat.last_heartbeat(project.config.state_dir, now)
    if not heartbeat.is_stale(setting, beat, now):
        return None
    return _problem(project, setting, beat, now, runner, job)


def project_troubles(project: Project, now: datetime | None = None) -> list[Problem]:
    """What stops this project's scheduling (``control.troubles.look``: its state folder, its history, a
    failing tick, a registry entry its setting has lost), for ``croft status`` and ``schedule status``."""
    return list(project_look(project, now).problems)


def project_look(project: Project, now: datetime | None = None) -> Look:
    """``project_troubles`` with the setting the look read (None when it could not be read), for
    ``croft status`` to hand to the warnings after it rather than read runs.sqlite again for each."""
    try:
        entry = Registry().find(project.root)
    except CroftError:
        entry = None  # an unreadable registry is doctor's link (and the stale warning's first cause)
    return look(str(project.root), project.config.state_dir, now or clock.now(), entry.via if entry else None)


def theirs_refusal(project: Project) -> None:
    """UNSAFE_PERMISSIONS, raised, when the project's folder or state belongs to another user and its
    state cannot be read: this user's scheduler skips such a project, and that (naming the file) is what
    ``status``, ``schedule status`` and ``doctor`` say, not the PATH_UNWRITABLE of her private state folder
    nor an "off" read from nothing."""
    unsafe = project_unsafe(str(project.root), project.config.state_dir)
    if unsafe is None or not unsafe.theirs:
        return
    try:
        read_scheduling_file(project.config.state_dir)
    except CroftError:
        raise unsafe_error(unsafe, project=str(project.root)) from None


def unsafe_warning(
    project: Project, now: datetime | None = None, *, setting: Scheduling | None = None
) -> Problem | None:
    """UNSAFE_PERMISSIONS for ``croft status`` / ``schedule status`` when the scheduler would skip this
    project (or do nothing at all) because of whom its files or CROFT_HOME's belong to and who may write
    them: the broken permission link of doctor's chain, in its words, with its fix. Costs a few ``stat``
    calls, so it is asked every time scheduling is on, stale or not (``setting``: the one the command
    already read; None reads it, and raises the problem of a history it cannot be read from)."""
    now = now or clock.now()
    if setting is None:
        setting = read_scheduling_file(project.config.state_dir)
    found = project_unsafe(str(project.root), project.config.state_dir)
    if effective_state(setting, now) == "off":  # not ticked anyway, unless another user's "off" is read
        if found is None or not found.theirs:  # (then it is skipped whatever its setting says)
            return None
        return unsafe_problem(found, severity="warning", project=str(project.root))
    if home_unsafe(croft_home()) is None and found is None:
        return None  # the usual case, by the facts the chain's permission links are decided from
    chain = permissions_chain(project, setting, now)
    broken = next((link for link in links(chain) if not link.ok and link.cause == UNSAFE), None)
    unsafe = chain.home_unsafe or chain.places[0].unsafe
    if broken is None or unsafe is None:
        return None
    where = None if chain.home_unsafe else str(project.root)
    return unsafe_problem(unsafe, severity="warning", project=where).with_(message=broken.detail)


def no_tick_problem(
    project: Project, setting: Scheduling, started: datetime, waited_ms: int, job: InstalledJob
) -> Problem:
    """SCHEDULER_STALE for ``croft schedule on`` when no tick came within its wait (``job``: what the
    command installed, read back once)."""
    return _problem(project, setting, None, started, None, job, waited_ms=waited_ms)
