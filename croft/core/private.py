"""croft's own folders and files, private whatever the umask: folders 0700, files 0600.

``.croft/`` holds step logs and runs.sqlite, and CROFT_HOME the registry, the job record and the tick log;
under ``umask 000`` they used to come out 0777 and 0666. The umask stays the user's for the files their
own code makes; what croft makes for itself is private by construction: every folder level it creates is
made 0700 (``Path.mkdir(parents=True)`` would give the levels above the last the umask's mode), and every
file it creates 0600. SQLite makes a database's -wal, -shm and journal with the database's own mode, so
creating the database file first is enough. Folders and files that exist already are left as they are.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

from croft.core.trust import untrusted

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "create_file", "make_dirs", "open_append", "write_new"]

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def make_dirs(path: str | os.PathLike[str]) -> None:
    """``path`` and every missing folder above it, each made 0700; an existing folder is fine. A file (or
    anything but a folder) in the way raises NotADirectoryError naming it (``core.disk`` makes that
    STATE_DIR_INVALID); anything else raises as ``mkdir`` does."""
    folder = os.fspath(path)
    try:
        os.mkdir(folder, FOLDER_MODE)
    except FileExistsError:
        if not os.path.isdir(folder):
            raise _in_the_way(folder) from None
    except FileNotFoundError:
        parent = os.path.dirname(folder.rstrip(os.sep)) or os.sep
        if parent == folder:
            raise
        make_dirs(parent)
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise _in_the_way(folder) from None


def _in_the_way(folder: str) -> NotADirectoryError:

    return NotADirectoryError(errno.ENOTDIR, "something that is not a folder is in its place", folder)


def create_file(path: str | os.PathLike[str]) -> None:
    """Create ``path`` empty and 0600 unless it exists (then it is left untouched), so that a program
    that creates it with its own mode (SQLite) finds it already made."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE))


def open_append(path: str | os.PathLike[str]) -> int:
    """A descriptor appending to ``path`` (created 0600, its folders 0700); OSError when it cannot."""
    make_dirs(os.path.dirname(os.fspath(path)) or ".")
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)


def write_new(folder: Path, name: str, data: bytes) -> None:
    """Write a new file ``name`` (0600) into ``folder``, made 0700 when missing, without following a link
    anywhere: the folder is opened as itself (not a symlink) and must be this user's, writable by no one
    else, and the file is created there, never opened if something is already in its place. For files
    written where another user might have prepared the ground (a shared temporary folder). Raises
    OSError (PermissionError for a folder croft must not trust)."""

    make_dirs(folder)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        why = untrusted(st, group_may_write=False)
        if why is None and st.st_uid != os.geteuid():  # root's own folder is no place for a user's file
            why = "it belongs to another user"
        if why is not None:
            raise PermissionError(f"{folder}: croft does not write there: {why}")
        out = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE, dir_fd=fd
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
    finally:
        os.close(fd)
