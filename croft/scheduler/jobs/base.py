"""What the three job backends share: their state as data, their health links, and the one install failure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from croft.core.problems import CroftError
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Completed
from croft.scheduler.jobs.spec import JobSpec

__all__ = ["SERVE_FALLBACK", "Backend", "JobState", "install_failed"]

# Where no OS job can be installed, this is what still ticks a project.
SERVE_FALLBACK: dict[str, str] = {
    "kind": "command",
    "description": "tick from a foreground `croft serve` instead of an OS job",
    "command": "croft schedule on --no-os-job",
}


@dataclass
class JobState:
    backend: str
    label: str
    installed: bool
    loaded: bool | None  # None: the backend cannot tell (cron has no per-line state)
    python: str | None = None
    location: str = ""
    notes: list[str] = field(default_factory=list)

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
    """Put each (already quoted) value in its ``${name}`` field; the templates' comments keep ``${...}``."""
    for name, value in values.items():
        field_ = "${" + name + "}"
        if field_ not in template:
            raise ValueError(f"the job template has no field {field_}")
        template = template.replace(field_, value)
    return template
