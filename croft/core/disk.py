"""When the machine, not croft, is why a write fails: a full disk, a read-only disk, a folder without
permission. Each is a problem of its own that names the path (DISK_FULL, PATH_UNWRITABLE), never "a bug
in croft" with a crash file, from whichever command meets it.

Two ways in: ``os_problem`` reads an OSError that was raised (its errno, its file name), and
``folder_problem`` looks at a folder before anything fails (``statvfs`` and ``access``: one system call
each), which is how the scheduler's views and the per-user tick see a full or read-only disk even when
nothing has tried to write yet (an idle minute's heartbeat fits in a block the file already has).
"""

from __future__ import annotations

import errno
import os
import shlex
import stat
from typing import TYPE_CHECKING

from croft.core.paths import croft_home
from croft.core.problems import problem

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from croft.core.problems import Problem

__all__ = [
    "LOW_SPACE_BYTES",
    "cannot_open",
    "disk_full",
    "folder_problem",
    "guess_folder",
    "not_a_folder",
    "os_problem",
    "unwritable",
]

LOW_SPACE_BYTES = 1024 * 1024  # less than this free and a SQLite write (a page, its journal) may not fit
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
UNWRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def disk_full(what: str, where: str, cause: str) -> Problem:
    """DISK_FULL for a write that found no space (the history, the warehouse, a log, a state file)."""

    return problem(
        "DISK_FULL",
        f"{what}: the disk holding {where} is full ({cause})",
        "Free some space on that disk, then run again; nothing half-written was kept, and the scheduler"
        " goes on by itself once there is room.",
        details={"file": where, "cause": cause},
    )


def unwritable(what: str, where: str, cause: str, *, read_only: bool = False) -> Problem:
    """PATH_UNWRITABLE for a path croft cannot write (a read-only disk, no permission), with the fix that
    works as written when croft knows one (a chmod of a path this user owns)."""

    fix = None
    if read_only:
        hint = f"The disk holding {where} is mounted read-only: remount it read-write (or move the project)."
    else:
        hint = f"Give your user read and write access to {where}, or point croft.json's stateDir elsewhere."
        mode = _chmod_fix(where)
        if mode:
            fix = {"kind": "command", "description": "give your user back its access", "command": mode}
    return problem(
        "PATH_UNWRITABLE",
        f"{what}: croft cannot write {where} ({cause})",
        hint + " The scheduler goes on by itself once it can write again.",
        fix=fix,
        details={"file": where, "cause": cause},
    )


def cannot_open(what: str, where: str, cause: str) -> Problem:
    """PATH_UNWRITABLE for a SQLite file that cannot be opened or created (a folder, no permission)."""

    mode = _chmod_fix(where)
    return problem(
        "PATH_UNWRITABLE",
        f"{what}: SQLite cannot open or create {where} ({cause})",
        "Make sure that path is a file (not a folder) this user can read and write, in a folder it can"
        " write; croft.json's database and stateDir choose where these files live.",
        fix={"kind": "command", "description": "give your user back its access", "command": mode}
        if mode
        else None,
        details={"sqlite": cause, "file": where},
    )


def _chmod_fix(where: str) -> str | None:
    """``chmod u+rw PATH`` (``u+rwx`` for a folder) when this user owns the path and lacks access to it."""
    try:
        st = os.stat(where)
    except (OSError, ValueError):
        return None
    if st.st_uid != os.geteuid() or os.access(where, os.R_OK | os.W_OK):
        return None

    mode = "u+rwx" if stat.S_ISDIR(st.st_mode) else "u+rw"
    return f"chmod {mode} {shlex.quote(where)}"


def not_a_folder(what: str, where: str) -> Problem:
    """STATE_DIR_INVALID: a folder croft keeps its state in (``.croft/``, its ``logs/``, CROFT_HOME's) has
    a file (or a link to one) in its place, so nothing croft writes there can be written. The fix moves
    it aside, keeping it; croft makes the folder again on its next write."""

    aside = f"mv {shlex.quote(where)} {shlex.quote(where + '.not-a-folder')}"
    return problem(
        "STATE_DIR_INVALID",
        f"{what}: {where} should be a folder, and something else is in its place",
        "croft keeps its state (step logs, run history, the scheduler's files) in folders it makes itself;"
        " this one was replaced by a file. Move it aside (the fix keeps it), and croft makes the folder"
        " again on its next write; the scheduler goes on by itself once it can.",
        fix={"kind": "command", "command": aside, "description": "move what is in the way aside"},
        details={"file": where},
    )


def os_problem(
    exc: BaseException, what: str = "croft could not write a file", path: Any = None
) -> Problem | None:
    """DISK_FULL, PATH_UNWRITABLE or STATE_DIR_INVALID for an OSError of a full or unwritable disk or of
    a file where croft's folder should be (found in ``exc`` or the errors it was raised from), naming its
    file (else ``path``, else the folder ``guess_folder`` finds); None for any other error."""
    found = _os_error(exc)
    if found is None:
        return None
    where = found.filename or path or guess_folder(())
    where = os.fsdecode(where) if where is not None else "a folder croft writes"
    cause = found.strerror or str(found)
    if found.errno == errno.ENOTDIR:
        return not_a_folder(what, _in_the_way(str(where)))
    if found.errno in FULL_ERRNOS:
        return disk_full(what, str(where), cause)
    return unwritable(what, str(where), cause, read_only=found.errno == errno.EROFS)


def _os_error(exc: BaseException | None) -> OSError | None:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS | UNWRITABLE_ERRNOS | {errno.ENOTDIR}:
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _in_the_way(where: str) -> str:
    """The first level of ``where`` that exists and is not a folder (``logs`` of ``.croft/logs/x.log``),
    else ``where`` itself."""
    parts = where.split(os.sep)
    for depth in range(2, len(parts) + 1):
        level = os.sep.join(parts[:depth])
        if level and os.path.lexists(level) and not os.path.isdir(level):
            return level
    return where


def folder_problem(
    folder: Any, what: str | None = None, *, exists: bool = False, seen: Any = None, disks: Any = None
) -> Problem | None:
    """Why ``folder`` (or, when it does not exist yet, the nearest folder above it) cannot take a write
    now: no permission, a read-only disk, less than ``LOW_SPACE_BYTES`` free; None when it can.
    ``exists``: the caller has just seen ``folder`` (an absolute path) there, so it is not looked for.
    ``seen``: its ``stat`` just taken, with the owner and mode it had when it last took a write (the
    per-user tick's idle stamp), so the permission is as it was and only the disk is asked; ``disks``:
    the answers of this minute by device, so a thousand projects on one disk cost one ``statvfs``."""
    path = os.fspath(folder) if exists or seen is not None else _existing(os.fspath(folder))
    if path is None:
        return None
    what = what or f"the folder {os.fspath(folder)}"
    try:
        vfs = None if disks is None or seen is None else disks.get(seen.st_dev)
        if vfs is None:
            vfs = os.statvfs(path)
            if disks is not None and seen is not None:
                disks[seen.st_dev] = vfs
    except OSError:
        return None
    if vfs.f_flag & os.ST_RDONLY:
        return unwritable(what, path, "read-only file system", read_only=True)
    if seen is None and not os.access(path, os.W_OK | os.X_OK):
        return unwritable(what, path, "permission denied")
    free = vfs.f_bavail * vfs.f_frsize
    if free < LOW_SPACE_BYTES and vfs.f_blocks:
        return disk_full(what, path, f"{free // 1024} KiB free")
    return None


def guess_folder(candidates: Iterable[Any]) -> str | None:
    """The first of ``candidates`` (or croft's home) whose folder cannot take a write, for an error that
    did not say which file it was writing."""

    try:
        home = croft_home()
    except Exception:  # a bad CROFT_HOME is its own error, reported elsewhere
        home = None
    for folder in [*candidates, home]:
        if folder is not None and folder_problem(folder) is not None:
            return _existing(os.fspath(folder))
    return None


def _existing(path: str) -> str | None:
    here = os.path.abspath(path)
    for _ in range(64):
        if os.path.isdir(here):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None
