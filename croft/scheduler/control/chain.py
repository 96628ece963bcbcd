"""The scheduler chain, decided: every link from the registry to the job to each project, in the order a
person would check them.

``croft doctor`` shows every link; SCHEDULER_STALE names the first broken link of one project's chain in
the very words doctor shows for it, so the two never disagree. Nothing here looks at the machine:
``gather`` collects the facts (so each link is tested by value), and the job backend decides its own
links (``Backend.health``: the cron daemon, linger), which arrive here ready made.

registry (readable, the project in it) -> permissions (CROFT_HOME and its files this user's alone) -> OS
job (installed, loaded) -> the interpreter it runs -> the tick log's folder -> the backend's own links ->
croft serve (for ``--no-os-job`` projects) -> each project (there, trusted, not in a folder macOS hides
from background jobs, ticking). A project that is quiet while every link above it holds gets its cause
from the tick log's tail. Doctor's chain ends with each project's notifications (``control.notifying`` gathers them, ``control.notifylink`` words them),
which can warn but never break it.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from croft.core.problems import Problem
from croft.core.trust import Unsafe
from croft.scheduler.control.notifylink import Notifying, notify_link
from croft.scheduler.jobs.base import SERVE_FALLBACK, JobState
from croft.scheduler.jobs.health import Link

__all__ = [
    "PROTECTED_FOLDERS",
    "REINSTALL",
    "SERVE",
    "UNSAFE",
    "Chain",
    "Interpreter",
    "Place",
    "diagnose",
    "links",
    "privacy_words",
    "protected_folder",
]

# The fixes croft knows, each written once.
REINSTALL = (
    "croft schedule on"  # reinstalls the job with this croft, re-registers the project, makes the log folder
)
SERVE = "croft serve"
NO_OS_JOB = SERVE_FALLBACK["command"]

# The folders of a macOS home that privacy protection (TCC) hides from background jobs.
PROTECTED_FOLDERS = ("Desktop", "Documents", "Downloads")
_PROTECTED = re.compile(r"/(" + "|".join(PROTECTED_FOLDERS) + r")\b", re.IGNORECASE)

_TICKERS = {"os-job": "the OS job", "serve": "croft serve"}


@dataclass(frozen=True)
class Place:
    """One project as the chain sees it."""

    root: str
    via: str | None  # how its setting says it ticks ("os-job" / "serve")
    registered_via: str | None  # its registry entry's via; None when it is not registered
    state: str = "on"  # the effective scheduling state
    quiet: bool = False  # stale, or no tick came within `croft schedule on`'s wait
    last_tick: str | None = None
    presence: str = "present"  # registry.presence: present / gone / missing / unknown
    presence_why: str = ""
    unsafe: Unsafe | None = None  # user.trusted.project_unsafe: the part croft does not trust
    ahead: str | None = None  # its last mark, when that is far ahead of the clock (heartbeat.ahead_of)
    troubles: tuple[Problem, ...] = ()  # what stops it, first things first (control.troubles.look)
    notifying: Notifying | None = None  # doctor's notification facts (control.notifying)


@dataclass(frozen=True)
class Interpreter:
    """What starting the job's interpreter showed (``spec.interpreter_imports_croft``)."""

    python: str | None  # None: croft cannot tell which interpreter the job runs
    found: bool = True  # the file is there and executable
    imports: bool = True  # it imports croft in an environment as bare as the job's
    said: str = ""  # its own words, for either answer


@dataclass(frozen=True)
class Chain:
    """The facts every link is decided from, gathered by ``gather``."""

    places: tuple[Place, ...]
    registry: str = "projects.json"  # the registry file
    entries: int = 0
    registry_error: tuple[str, str | None] | None = None  # (message, fix) when it cannot be read
    registry_notes: tuple[str, ...] = ()  # what reading it repaired (restored from its last good copy)
    home_unsafe: Unsafe | None = None  # user.trusted.home_unsafe: CROFT_HOME's part croft does not trust
    home: str = "~/.croft"  # croft's per-user folder
    home_trouble: Problem | None = None  # why it cannot take a write (core.disk.folder_problem)
    job_note: str | None = None  # what reading the job record repaired (jobs.record.installed_job)
    job: JobState | None = None  # what the recorded backend says; None when no job is recorded
    backend_links: tuple[Link, ...] = ()  # Backend.health() of the installed job
    interpreter: Interpreter | None = None
    log_file: str = "tick.log"
    log_dir_exists: bool = True
    log: tuple[str, ...] = ()  # the tick log's tail
    serve_alive: bool = False
    platform: str = sys.platform
    wsl: bool = False


def links(chain: Chain) -> list[Link]:
    """Every link, in order: what ``croft doctor`` shows."""
    jobs = _job_links(chain) if any(p.via == "os-job" for p in chain.places) else [_NO_JOB_NEEDED]
    if chain.serve_alive:  # croft serve ticks the OS job's projects too while it runs (user.tick_all._ours)
        jobs = [_while_served(link) for link in jobs]
    serve = [_serve_link(chain)] if any(p.via == "serve" for p in chain.places) else []
    projects = [_project_link(chain, p, _upstream(chain, p, jobs, serve)) for p in chain.places]
    told = [notify_link(p.root, p.notifying, p.via) for p in chain.places if p.notifying is not None]
    return [
        _registry_link(chain),
        _permissions_link(chain),
        _home_link(chain),
        *jobs,
        *serve,
        *projects,
        *told,
    ]


def diagnose(chain: Chain) -> Link:
    """The first broken link of a chain gathered for one quiet project (SCHEDULER_STALE's cause). There is
    always one: when every link above holds, the project's own link breaks, with the tick log's word."""
    out = links(chain)
    return next((link for link in out if not link.ok), out[-1])


def protected_folder(text: str) -> str | None:
    """The macOS protected folder a path (or a log line) names, spelled as macOS does, or None."""
    found = _PROTECTED.search(text)
    if found is None:
        return None
    return next(f for f in PROTECTED_FOLDERS if f.lower() == found.group(1).lower())


def privacy_words(folder: str | None, python: str | None) -> str:
    where = f"~/{folder}" if folder else "a protected folder"
    return (
        f"macOS privacy protection stops the job from reading {where}: give {python or 'its interpreter'}"
        " Full Disk Access (System Settings > Privacy & Security), or keep the project elsewhere"
    )


# -- the registry ----------------------------------------------------------------------------------


def _registry_link(chain: Chain) -> Link:
    if chain.registry_error is not None:
        message, fix = chain.registry_error
        return Link.broken("registry", message, "registry_unreadable", fix, code="CONFIG_INVALID")
    for place in chain.places:
        wrong = _registration(chain, place)
        if wrong is not None:
            return wrong
    said = "".join(f"; {note}" for note in chain.registry_notes)
    return Link.holds("registry", f"{chain.registry}: {chain.entries} project(s){said}")


def _registration(chain: Chain, place: Place) -> Link | None:
    """Broken when the project should tick but the one who ticks it does not list it that way, or when the
    registry lists it to tick but its own setting says off (both directions agree, or doctor says so)."""
    if place.state == "off":
        lost = _trouble(place, "setting_lost")
        if lost is None:
            return None
        return Link.broken("registry", lost.message, "setting_lost", (lost.fix or {}).get("command"))
    if place.via not in _TICKERS or place.registered_via == place.via:
        return None
    if place.registered_via is None:
        where = f"is not in the per-user registry {chain.registry}"
    else:
        where = f"is registered to tick from {_TICKERS.get(place.registered_via, place.registered_via)}"
    return Link.broken(
        "registry",
        f"{place.root} {where}, so {_TICKERS[place.via]} never ticks it",
        "not_registered",
        NO_OS_JOB if place.via == "serve" else REINSTALL,
    )


def _trouble(place: Place, cause: str) -> Problem | None:
    return next((t for t in place.troubles if (t.details or {}).get("cause") == cause), None)


# -- croft's home ------------------------------------------------------------------------------------


def _home_link(chain: Chain) -> Link:
    """Croft's per-user folder holds the registry, the tick log and the slots every tick takes."""
    found = chain.home_trouble
    if found is None:
        return Link.holds("croft home", f"{chain.home} can take writes")
    cause = "home_full" if found.code == "DISK_FULL" else "home_unwritable"
    return Link.broken("croft home", found.message, cause, (found.fix or {}).get("command"), code=found.code)


# -- permissions -----------------------------------------------------------------------------------

UNSAFE = "unsafe_permissions"


def _permissions_link(chain: Chain) -> Link:
    found = chain.home_unsafe
    if found is None:
        return Link.holds("permissions", "CROFT_HOME and its files are yours, and no one else can write them")
    return Link.broken(
        "permissions",
        f"croft does not trust {found.path}: {found.why}, so the scheduler does nothing for this user",
        UNSAFE,
        found.fix,
        code="UNSAFE_PERMISSIONS",
    )


# -- the OS job ------------------------------------------------------------------------------------

_NO_JOB_NEEDED = Link.holds("OS job", "no registered project ticks through an OS job, so none is needed")


def _job_links(chain: Chain) -> list[Link]:
    job = chain.job
    if job is None:
        why = chain.job_note or "croft has no record of one"
        return [
            Link.broken(
                "OS job", f"the per-user scheduler job is not installed: {why}", "job_missing", REINSTALL
            )
        ]
    if not job.installed:
        notes = "".join(f" ({note})" for note in job.notes)
        return [
            Link.broken(
                "OS job", f"the {job.backend} job {job.label} is missing{notes}", "job_missing", REINSTALL
            )
        ]
    noted = f" ({chain.job_note})" if chain.job_note else ""
    out = [Link.holds("OS job", f"{job.backend} job {job.label} at {job.location}{noted}")]
    if job.loaded is False:
        out.append(
            Link.broken(
                "job loaded",
                f"the {job.backend} job {job.label} is installed but {job.backend} has not loaded it",
                "job_not_loaded",
                REINSTALL,
            )
        )
    elif job.loaded:
        out.append(Link.holds("job loaded", f"{job.backend} has loaded it"))
    out += [_interpreter_link(chain.interpreter), _log_link(chain), *chain.backend_links]
    return out


def _while_served(link: Link) -> Link:
    """A broken link of the OS job while a croft serve is alive: the projects still tick (serve ticks
    them), so it is a warning with its fix, not a cause; once serve ends it is broken again."""
    if link.ok:
        return link
    return Link.warns(
        link.check,
        f"{link.detail}; croft serve ticks these projects while it runs",
        link.cause or "job_missing",
        link.fix,
        "Projects turned on with the OS job stop ticking when croft serve stops: repair the job"
        + (" (the fix does it)." if link.fix else "; `croft docs scheduler` explains the chain."),
        code=link.code,
    )


def _interpreter_link(found: Interpreter | None) -> Link:
    if found is None or found.python is None:
        return Link.holds("interpreter", "croft cannot tell which interpreter the job runs")
    if not found.found:
        return Link.broken(
            "interpreter", f"the job runs {found.python}, which is gone", "interpreter_gone", REINSTALL
        )
    if not found.imports:
        return Link.broken("interpreter", found.said, "croft_missing", REINSTALL)
    return Link.holds("interpreter", found.said or f"{found.python} runs and imports croft")


def _log_link(chain: Chain) -> Link:
    if not chain.log_dir_exists:
        return Link.broken(
            "tick log",
            f"the tick log's folder {os.path.dirname(chain.log_file)} is gone, so the job cannot open its log"
            " and never starts croft",
            "log_folder_missing",
            REINSTALL,
        )
    return Link.holds("tick log", f"the job appends to {chain.log_file}")


# -- croft serve -----------------------------------------------------------------------------------


def _serve_link(chain: Chain) -> Link:
    if chain.serve_alive:
        return Link.holds("croft serve", "running")
    return Link.broken(
        "croft serve",
        "projects turned on with --no-os-job tick from `croft serve`, and none is running",
        "serve_not_running",
        SERVE,
    )


# -- each project ----------------------------------------------------------------------------------


def _upstream(chain: Chain, place: Place, jobs: list[Link], serve: list[Link]) -> Link | None:
    """The first broken link above this project that stops it ticking, or None."""
    if chain.registry_error is not None:
        return _registry_link(chain)
    if chain.home_unsafe is not None:
        return _permissions_link(chain)
    wrong = _registration(chain, place)
    if wrong is not None:
        return wrong
    above = jobs if place.via == "os-job" else serve if place.via == "serve" else []
    return next((link for link in above if not link.ok), None)


def _python(chain: Chain) -> str | None:
    if chain.interpreter is not None and chain.interpreter.python:
        return chain.interpreter.python
    return chain.job.python if chain.job is not None else None


def _project_link(chain: Chain, place: Place, upstream: Link | None) -> Link:
    name = f"project {place.root}"
    if place.presence == "unknown":
        return Link.holds(name, f"unknown: {place.presence_why}")  # never pruned; croft cannot look
    if place.presence != "present":
        return Link.broken(
            name,
            f"{place.presence}: {place.presence_why}; it stays on the schedule and ticks again once it is back",
            "project_missing",
            code="PROJECT_GONE",
        )
    if place.unsafe is not None and place.state != "off":
        found = place.unsafe
        return Link.broken(
            name,
            f"not ticked: croft does not trust {found.path}: {found.why}",
            UNSAFE,
            found.fix,
            code="UNSAFE_PERMISSIONS",
        )
    folder = protected_folder(place.root + "/")
    if place.via == "os-job" and place.state != "off" and chain.platform == "darwin" and folder:
        return Link.broken(name, privacy_words(folder, _python(chain)), "privacy")
    troubles = [t for t in place.troubles if t.code != "CLOCK_MOVED_BACK"]
    if troubles:  # its folder, its history, its failing tick, its lost setting: said before "quiet"
        first = troubles[0]
        cause = str((first.details or {}).get("cause") or "unknown")
        inner = (first.details or {}).get("problem") or {}  # a failing tick's own problem, if that is it
        code = first.code if first.code != "SCHEDULER_BROKEN" else inner.get("code")
        return Link.broken(name, first.message, cause, (first.fix or {}).get("command"), code=code)
    moved = next((t for t in place.troubles if t.code == "CLOCK_MOVED_BACK"), None)
    if not place.quiet and moved is not None:  # it ticks; the clock moved back: a warning, said once a day
        return Link.warns(name, moved.message, "clock_backwards", None, moved.hint, code=moved.code)
    if not place.quiet:
        return Link.holds(
            name, f"{place.state} via {place.via or '-'}, last tick {place.last_tick or 'never'}"
        )
    if upstream is not None:
        return Link.broken(
            name,
            f"not ticking (last tick {place.last_tick or 'never'}) because the {upstream.check} check above fails",
            upstream.cause or "unknown",
            upstream.fix,
        )
    if place.ahead and place.state == "on":
        return Link.broken(
            name,
            f"it was last heard of at {place.ahead}, ahead of the clock: the clock moved backwards (or"
            " CROFT_NOW was set ahead), so croft cannot tell whether it still ticks; the next tick stamps"
            " the time again",
            "clock_backwards",
        )
    return _evidence(chain, place, name)


def _evidence(chain: Chain, place: Place, name: str) -> Link:
    """Every link above holds, yet the project is quiet: what the tick log's tail says."""
    if place.via == "serve":
        return Link.broken(
            name,
            "croft serve runs but has not ticked this project; the end of the tick log is below",
            "serve_not_ticking",
        )
    python = _python(chain)
    text = "\n".join(chain.log)
    said = text.lower()
    if chain.platform == "darwin" and ("operation not permitted" in said or "eperm" in said):
        return Link.broken(name, privacy_words(protected_folder(text), python), "privacy")
    if "no module named croft" in said:
        who = f"the job's interpreter {python}" if python else "the job's interpreter"
        return Link.broken(
            name, f"{who} has no croft installed (the tick log says so)", "croft_missing", REINSTALL
        )
    if "not found" in said or "no such file or directory" in said:
        return Link.broken(
            name,
            "the job could not start its interpreter (the tick log says it was not found)",
            "interpreter_gone",
            REINSTALL,
        )
    if chain.wsl:
        return Link.broken(
            name,
            "this is WSL, where cron and systemd often do not run; use `croft schedule on --no-os-job` and"
            " keep `croft serve` running",
            "wsl",
            NO_OS_JOB,
        )
    if not chain.log:
        return Link.broken(
            name,
            "it does not tick, and the tick log is empty: the job may never have run",
            "unknown",
            REINSTALL,
        )
    return Link.broken(
        name,
        "it does not tick, and croft cannot tell why; the end of the tick log is below",
        "unknown",
        REINSTALL,
    )
