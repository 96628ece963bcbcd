"""``<CROFT_HOME>/job.json``: which backend holds the per-user job, and the one reader of what it installed.

A small note that lets status and doctor look at the right thing without guessing: the backend ``croft
schedule on`` installed, for the label in force, with the interpreter it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from croft.core.jsonfile import read_object, write_atomic
from croft.core.paths import croft_home, job_label
from croft.core.problems import CroftError
from croft.scheduler.jobs import backends
from croft.scheduler.jobs.base import Backend, JobState
from croft.scheduler.jobs.oscmd import Runner

__all__ = ["clear", "installed_backend", "installed_job", "read", "write"]


def _path(home: Path | None = None) -> Path:
    return (home or croft_home()) / "job.json"


def read(home: Path | None = None) -> dict[str, Any] | None:
    """``{backend, label, python, installedAt}`` of the installed job, or None."""
    return read_object(_path(home))


def write(record: dict[str, Any], home: Path | None = None) -> None:
    write_atomic(_path(home), record)


def clear(home: Path | None = None) -> None:
    _path(home).unlink(missing_ok=True)


def installed_backend(runner: Runner | None = None) -> Backend | None:
    """The backend the job record names for the label in force, or None when none is recorded."""
    record = read()
    if not record or record.get("label") != job_label():
        return None
    try:
        return backends.backend(str(record.get("backend")), runner)
    except CroftError:
        return None


def installed_job(runner: Runner | None = None) -> JobState | None:
    """What that backend says of the job (installed, loaded, its interpreter), or None without a record."""
    backend = installed_backend(runner)
    return None if backend is None else backend.inspect(job_label())
