"""Small JSON files croft keeps beside its databases: read leniently, written whole or not at all.

A reader sees the old file or the new one, never half of one: every write goes to a temporary file in
the same folder (0600, since these files name the user's projects and processes) and is renamed over
the old one. ``durable`` adds the fsyncs that make the new content and the rename survive a power cut,
for the files whose loss would silently stop the scheduler (the registry).
"""

from __future__ import annotations

import json
import os
from json import loads
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.private import make_dirs

if TYPE_CHECKING:
    from typing import Any

__all__ = ["read_object", "write_atomic"]


def read_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing, unreadable, not JSON or not an object."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = loads(handle.read())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep to read
        return None
    return value if isinstance(value, dict) else None


def write_atomic(
    path: str | os.PathLike[str], value: Any, *, indent: int | None = 2, durable: bool = False
) -> None:
    """Write ``value`` as JSON to ``path`` (its folder made 0700 when missing), replacing it in one rename."""
    path = Path(path)
    make_dirs(path.parent)
    text = json.dumps(value, indent=indent, ensure_ascii=False) + ("\n" if indent is not None else "")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = _create(tmp)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None:  # a write or fsync: say which file, so the error names it
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _sync_folder(path.parent)


def _create(tmp: Path) -> int:
    """The temporary file, made new (0600) and never through a link: a stale one (a crash between create
    and rename) is removed first, so a link standing at its predictable name is never written through."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(tmp, flags, 0o600)
    except FileExistsError:
        tmp.unlink()
        return os.open(tmp, flags, 0o600)


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the platform allows opening a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
