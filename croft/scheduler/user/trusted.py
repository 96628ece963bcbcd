"""What the scheduler must be able to trust before it acts: this user's CROFT_HOME and each project.

The scheduler runs code as the user whose job it is. The registry says which projects; a project's own
files say what code, and its runs.sqlite which code a person approved. So, as ssh and cron do with their
files, croft refuses to act on any of them that another user owns or could change (``core.trust``):

- CROFT_HOME itself, the registry, ``job.json``, ``slots.sqlite``, the tick's caches and its log folder
  (the group may not write them either): when one fails, the per-user tick does nothing at all, and
  writes nothing into CROFT_HOME (whoever can write it could point a file croft writes elsewhere);
- each registered project's folder, ``croft.json``, ``assets/`` and ``lib/`` (the group may write these:
  a team's shared project; others may not) and its state folder (the group may not: runs.sqlite holds
  which code a person approved, so whoever writes it could approve code for this user's scheduler):
  such a project is skipped, with the reason in the tick log, ``croft status`` and ``croft doctor``, and
  the other projects tick as usual. What the group writes is safe to tick: a run imports nothing from
  the project root but its asset files and ``lib`` (``engine.loader``), and code changed there is held until
  the owner runs it by hand.

One rule in one place: the per-user tick, croft serve, ``croft schedule on`` and the chain of ``croft
doctor`` and ``croft status`` all ask this module.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING

from croft.core.problems import CroftError, problem
from croft.core.trust import Unsafe, check

if TYPE_CHECKING:
    from croft.core.problems import Problem, Severity

__all__ = [
    "HOME_FILES",
    "PART_NAMES",
    "PROJECT_PARTS",
    "home_unsafe",
    "project_parts",
    "project_unsafe",
    "state_dir_unsafe",
    "unsafe_error",
    "unsafe_problem",
    "words",
]

HOME_FILES = (
    "projects.json",
    "job.json",
    "slots.sqlite",
    "slots",
    "wake",
    "idle-beats.json",
    "tick-all.lock",
    "logs",
)
PROJECT_PARTS = ("croft.json", "assets", "lib")
STATE_PART = "/.croft"  # the default state folder: the group may not write it (approvals live there)
PART_NAMES = ("", *PROJECT_PARTS, ".croft")  # ``project_parts`` relative to the root ("": the root itself)


def home_unsafe(home: str | os.PathLike[str]) -> Unsafe | None:
    """The first of CROFT_HOME and its files that croft must not trust, or None."""
    base = os.fspath(home)
    for path in (base, *(os.path.join(base, name) for name in HOME_FILES)):
        found = check(path)
        if found is not None:
            return _aside(found) if path != base else found
    return None


def project_parts(root: str) -> list[str]:
    """What ``project_unsafe`` looks at, in its order: the folder, croft.json, assets/, lib/ and ``.croft/``
    (the idle stamp holds their owner and mode, so a project the check passed stays trusted while they
    stay as they were)."""
    return [f"{root}/{name}" if name else root for name in PART_NAMES]


def project_unsafe(root: str, state_dir: str | os.PathLike[str] | None = None) -> Unsafe | None:
    """The first part of a registered project croft must not trust, or None: the folder, croft.json,
    assets/, lib/, ``.croft/`` and the configured state folder when it is elsewhere."""
    for path in project_parts(root):
        found = check(path, group_may_write=not path.endswith(STATE_PART))
        if found is not None:
            return replace(found, fix=_off(root)) if found.theirs else found
    return None if state_dir is None else state_dir_unsafe(root, state_dir)


def state_dir_unsafe(root: str, state_dir: str | os.PathLike[str]) -> Unsafe | None:
    """The project's state folder when croft.json's ``stateDir`` moves it away from ``.croft`` (which
    ``project_unsafe`` checks anyway), or None."""
    path = os.fspath(state_dir)
    if path == os.path.join(root, ".croft"):
        return None
    found = check(path)  # the group may not write it: approvals live there
    return replace(found, fix=_off(root)) if found is not None and found.theirs else found


def _aside(found: Unsafe) -> Unsafe:
    """A file of CROFT_HOME that is another user's: moving it aside is safe once CROFT_HOME is this user's
    (``croft schedule on`` starts a new one)."""
    if not found.theirs:
        return found

    path = shlex.quote(found.path)
    aside = shlex.quote(found.path + ".untrusted")
    return replace(found, fix=f"mv {path} {aside}")


def _off(root: str) -> str:
    """Another user's project: take it off this user's schedule (``schedule off`` writes nothing into it)."""

    return f"croft schedule off --project {shlex.quote(root)}"


def unsafe_problem(found: Unsafe, *, severity: Severity = "error", project: str | None = None) -> Problem:
    """UNSAFE_PERMISSIONS for one path, in the words doctor shows for it."""

    if project is None:
        head = f"the scheduler does nothing for this user: {found.path}: {found.why}"
        hint = (
            "croft trusts CROFT_HOME and its files only when they are yours and no one else can write them,"
            " as ssh and cron do: whoever could change them could make the scheduler run their code as you."
        )
    else:
        head = f"the scheduler skips {project}: {found.path}: {found.why}"
        hint = (
            "croft ticks a project only when its folder, croft.json, assets/, lib/ and state folder are"
            " yours (or root's), only you and your group can write the first four and only you the state"
            " folder (it holds which code you approved): whoever could change them could make the"
            " scheduler run their code as you."
        )
    if found.theirs and found.fix is None:
        hint += " It is not yours: set CROFT_HOME to a folder of your own (or unset it for ~/.croft)."
    elif found.theirs:
        hint += " It is not yours: " + ("move it aside." if project is None else "take it off your schedule.")
    elif found.fix is not None:
        hint += " Make it writable by you alone; the next minute's tick then goes ahead."
    fix = None if found.fix is None else {"kind": "command", "command": found.fix, "description": found.why}
    details = {"path": found.path, "why": found.why} | ({"project": project} if project else {})
    return problem("UNSAFE_PERMISSIONS", head, hint, severity=severity, fix=fix, details=details)


def unsafe_error(found: Unsafe, *, project: str | None = None) -> CroftError:

    return CroftError(unsafe_problem(found, project=project))


def words(found: Unsafe) -> str:
    """One line for the tick log."""
    fix = f"; fix: {found.fix}" if found.fix else ""
    return f"{found.path}: {found.why}{fix}"
