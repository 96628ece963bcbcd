"""``<CROFT_HOME>/job.json``: which backend holds the per-user job, and the one reader of what it installed.

A small note that lets status and doctor look at the right thing without guessing: the backend ``croft
schedule on`` installed, for the label in force, with the interpreter it runs.

It is state croft can rebuild: a job.json that is there but cannot be read (empty, garbled) is not "no
job" (the job may well be running); the reader asks each backend of this platform whether it holds a
job of the label in force, writes the record again for the one that does, and says so (``note``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.jsonfile import read_object, write_atomic
from croft.core.paths import croft_home, job_label
from croft.core.problems import CroftError
from croft.scheduler.jobs import backends
from croft.scheduler.jobs.base import Backend, JobState
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Runner

__all__ = ["InstalledJob", "clear", "installed_backend", "installed_job", "read", "write"]


def _path(home: Path | None = None) -> Path:
    return (home or croft_home()) / "job.json"


def read(home: Path | None = None) -> dict[str, Any] | None:
    """``{backend, label, python, installedAt}`` of the installed job, or None."""
    return read_object(_path(home))


def write(record: dict[str, Any], home: Path | None = None) -> None:
    write_atomic(_path(home), record)


def clear(home: Path | None = None) -> None:
    _path(home).unlink(missing_ok=True)


@dataclass(frozen=True)
class InstalledJob:
    """The job the record names, read once per command and handed on (both None when none is recorded for
    the label in force), so status, doctor and the stale warning all look at the same answer. ``note``:
    what reading it had to repair (a record that could not be read, rebuilt or not)."""

    backend: Backend | None
    state: JobState | None
    note: str | None = None

    def health(self) -> list[Link]:
        """The backend's own links (``Backend.health``); none when no job is installed to need them."""
        if self.backend is None or self.state is None or not self.state.installed:
            return []
        return self.backend.health()


def _backend_of(record: dict[str, Any] | None, runner: Runner | None) -> Backend | None:
    if not record or record.get("label") != job_label():
        return None
    try:
        return backends.backend(str(record.get("backend")), runner)
    except CroftError:
        return None


def installed_backend(runner: Runner | None = None) -> Backend | None:
    """The backend the job record names for the label in force, or None when none is recorded."""
    return _backend_of(read(), runner)


def installed_job(runner: Runner | None = None) -> InstalledJob:
    """What that backend says of the job (installed, loaded, its interpreter). When the backend cannot
    read the interpreter back (a hand-edited line), the one croft recorded at install stands in."""
    record = read()
    if record is None and _path().exists():
        return _rebuilt(runner)
    backend = _backend_of(record, runner)
    if backend is None or record is None:
        return InstalledJob(None, None)
    state = backend.inspect(job_label())
    python = record.get("python")
    if state.installed and state.python is None and isinstance(python, str) and python:
        state = state.with_python(python)
    return InstalledJob(backend, state)


def _rebuilt(runner: Runner | None) -> InstalledJob:
    """job.json is there but unreadable: find the job among this platform's backends and record it again."""
    path = _path()
    label = job_label()
    for name in ("launchd",) if sys.platform == "darwin" else ("crontab", "systemd"):
        backend = backends.backend(name, runner)
        state = backend.inspect(label)
        if state.installed:
            try:
                write(
                    {
                        "backend": name,
                        "label": label,
                        "python": state.python,
                        "installedAt": clock.to_iso(clock.now()),
                    }
                )
            except OSError as exc:
                return InstalledJob(
                    backend, state, f"{path} cannot be read, and writing it again failed: {exc}"
                )
            note = f"{path} could not be read; found the {name} job {label} and wrote the record again"
            return InstalledJob(backend, state, note)
    return InstalledJob(None, None, f"{path} could not be read, and no backend holds a job {label}")
