"""One asset as croft knows it without running it: the facts the readers find and every part of croft uses.

The readers (``facts`` for Python assets, ``sqlfacts`` for SQL) produce them, ``rules`` checks them, and
the engine and the scheduler act on them; the scheduler caches them between ticks as JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.problems import Problem

if TYPE_CHECKING:
    from typing import Any, Literal

    Kind = Literal["ingest", "sql", "python"]

__all__ = ["DEFAULT_RETRIES", "DEFAULT_TIMEOUT_S", "AssetFacts", "Kind"]

DEFAULT_RETRIES = 2
DEFAULT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class AssetFacts:
    """What croft knows about one asset without running it. ``problems`` holds its static errors."""

    name: str
    kind: Kind
    path: Path
    rel: str
    schedule: str | None = None
    schedule_line: int | None = None
    inputs: tuple[str, ...] = ()
    key: tuple[str, ...] = ()
    incremental: dict[str, Any] | None = None
    write: str | None = None
    secrets: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    description: str | None = None
    retries: int = DEFAULT_RETRIES
    timeout_s: float = DEFAULT_TIMEOUT_S
    sql: str | None = None
    max_runtime_s: float | None = None  # a scheduled run's ceiling; None: croft.json's maxRuntime or 2 h
    # alerts; None: croft.json's notify (``notify.policy`` decides which wins)
    notify_after: int | None = None
    notify_remind_s: float | None = None  # bounds.REMIND_NEVER for "never"
    run_ping: str | None = None  # a URL or the name of a .env key
    fresh_within_s: float | None = None  # the freshness promise (no default: no promise)
    slow_after_s: float | None = None  # a scheduled step running this long is told once (no default)
    # when a fire is let go (croft.schedule.release); None: croft.json's jitter / quiet
    jitter_s: float | None = None
    quiet: tuple[str, ...] | None = None
    pool: str | None = None  # at most croft.json's pools[pool] of its scheduled runs at once for the user
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, so a scheduler can cache facts between ticks."""
        out: dict[str, Any] = asdict(self)
        for name, value in out.items():
            if isinstance(value, tuple):
                out[name] = list(value)
        out["path"] = str(self.path)
        out["problems"] = [p.to_dict() for p in self.problems]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssetFacts:
        values = dict(data)
        values["path"] = Path(values["path"])
        values["problems"] = tuple(Problem.from_dict(p) for p in values.get("problems", ()))
        if values.get("quiet") is not None:
            values["quiet"] = tuple(values["quiet"])
        for name in ("inputs", "key", "secrets", "checks"):
            values[name] = tuple(values.get(name) or ())
        return cls(**values)
