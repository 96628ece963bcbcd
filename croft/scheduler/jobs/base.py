"""What the three job backends share: their state as data, their health links, and the one install failure."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from croft.core.problems import CroftError
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Completed
from croft.scheduler.jobs.spec import JobSpec

__all__ = [
    "SERVE_FALLBACK",
    "Backend",
    "JobState",
    "fill",
    "install_failed",
    "refuse_unholdable",
    "unholdable",
]

# Where no OS job can be installed, this is what still ticks a project.
SERVE_FALLBACK: dict[str, str] = {
    "kind": "command",
    "description": "tick from a foreground `croft serve` instead of an OS job",
    "command": "croft schedule on --no-os-job",
}


@dataclass(slots=True)
class JobState:
    backend: str
    label: str
    installed: bool
    loaded: bool | None  # None: the backend cannot tell (cron has no per-line state)
    python: str | None = None
    location: str = ""
    notes: list[str] = field(default_factory=list)

    def with_python(self, python: str | None) -> JobState:
        """A copy naming ``python``, leaving the backend's own answer as it was."""
        return JobState(
            self.backend, self.label, self.installed, self.loaded, python, self.location, self.notes
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "label": self.label,
            "installed": self.installed,
            "loaded": self.loaded,
            "python": self.python,
            "location": self.location,
        }


class Backend(Protocol):
    name: str

    def install(self, spec: JobSpec) -> bool:
        """Install or update the job; True when anything changed. Raises INSTALL_FAILED."""
        ...

    def remove(self, label: str) -> bool:
        """Remove the job; True when there was one."""
        ...

    def inspect(self, label: str) -> JobState: ...

    def health(self) -> list[Link]:
        """What else must hold for this backend's job to fire (crontab: a cron daemon; systemd: linger),
        as links of the scheduler chain. A new backend adds its own checks here, nowhere else; they probe
        the OS, so the chain asks only for ``croft doctor`` or when scheduling is stale."""
        ...


def install_failed(backend: str, what: str, done: Completed | None, hint: str, **details: Any) -> CroftError:
    """INSTALL_FAILED in the program's own words, always offering the serve fallback."""
    words = f": {' '.join(done.argv)} failed: {done.words}" if done is not None else ""
    return CroftError(
        "INSTALL_FAILED",
        f"croft could not {what}{words}",
        f"{hint} Without an OS job, `croft schedule on --no-os-job` and a running `croft serve` tick"
        " this project instead.".strip(),
        fix=dict(SERVE_FALLBACK),
        details={"job": backend}
        | details
        | (
            {"command": list(done.argv), "status": done.status, "stderr": done.stderr.strip()}
            if done is not None
            else {}
        ),
    )


def fill(template: str, **values: str) -> str:
    """Put each (already quoted) value in its ``${name}`` field, in one pass over the template.

    One pass, because a value is a path and a path may itself contain the text ``${log}``: filled field
    by field, the second field would be expanded inside the first one's value. Text that names no field
    (the templates' comments say ``${...}``) stays as it is; a value whose field the template lacks is a
    bug in croft, so it raises."""
    missing = [name for name in values if "${" + name + "}" not in template]
    if missing:
        raise ValueError(f"the job template has no field ${{{missing[0]}}}")
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), template)


_FIELD = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def unholdable(value: str, allowed: Callable[[str], bool]) -> str | None:
    """Why a job file cannot hold ``value`` (its first character ``allowed`` refuses, in words), or None.

    A path that is not UTF-8 (surrogates from the file system) fits no job file: all three are UTF-8 text."""
    for char in value:
        if "\ud800" <= char <= "\udfff":
            return "bytes that are not UTF-8"
        if not allowed(char):
            return "a line break" if char in "\n\r" else f"the control character {char!r}"
    return None


def refuse_unholdable(backend: str, kind: str, spec: JobSpec, allowed: Callable[[str], bool]) -> None:
    """INSTALL_FAILED naming the first path of ``spec`` that a ``kind`` cannot hold, before anything is written."""
    for value in (spec.python, spec.entry, spec.croft_home, spec.log):
        why = unholdable(value, allowed)
        if why is not None:
            raise CroftError(
                "INSTALL_FAILED",
                f"{kind} cannot hold the path {value!r}: it contains {why}",
                "Move croft or CROFT_HOME to a folder whose name has no such character, then run"
                " `croft schedule on` again. Without an OS job, `croft schedule on --no-os-job` and a"
                " running `croft serve` tick this project instead.",
                fix=dict(SERVE_FALLBACK),
                details={"job": backend, "path": value},
            )
