"""``<CROFT_HOME>/job.json``: which backend holds the per-user job, and ``serve.json``: the live croft serve.

Both are small notes that let status and doctor look at the right thing without guessing: the job
record names the backend ``croft schedule on`` installed; the serve note names the serve process
(pid + start time, so a recycled pid is not taken for it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from croft.core.paths import croft_home

__all__ = ["clear", "read", "serve_alive", "serve_path", "write", "write_serve"]


def _path(home: Path | None = None) -> Path:
    return (home or croft_home()) / "job.json"


def serve_path(home: Path | None = None) -> Path:
    return (home or croft_home()) / "serve.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(value, out, indent=2)
        out.write("\n")
    os.replace(tmp, path)


def read(home: Path | None = None) -> dict[str, Any] | None:
    """``{backend, label, python, installedAt}`` of the installed job, or None."""
    return _read_json(_path(home))


def write(record: dict[str, Any], home: Path | None = None) -> None:
    _write_json(_path(home), record)


def clear(home: Path | None = None) -> None:
    _path(home).unlink(missing_ok=True)


def write_serve(home: Path | None = None) -> None:
    from croft.core.identity import current

    _write_json(serve_path(home), current().to_dict())


def serve_alive(home: Path | None = None) -> bool:
    from croft.core.identity import ProcessIdentity, is_alive

    note = _read_json(serve_path(home))
    if not note or not isinstance(note.get("pid"), int):
        return False
    who = ProcessIdentity(pid=note["pid"], start=note.get("procStart"), boot=note.get("bootId"))
    return is_alive(who)
