"""Problems and the one error root every part of croft raises.

    CroftError                      carries one Problem (code, message, hint, fix, ...)
    ├── project family   CONFIG_INVALID, ASSET_INVALID, NAME_CONFLICT, NAME_INVALID, SCHEDULE_INVALID,
    │                    SQL_NOT_SELECT, SQL_NOT_ONE_STATEMENT, SQL_ERROR, SECRET_MISSING, NOT_A_PROJECT,
    │                    INCREMENTAL_WITHOUT_KEY, HEADER_UNKNOWN_KEY,
    │                    CYCLE, UNKNOWN_ASSET, PROJECT_EXISTS, CLOCK_INVALID, KNOB_INVALID -> exit 2, never retried
    ├── run family       HTTP_ERROR, TIMEOUT, RUN_CRASHED, CHECK_FAILED, ASSET_CODE_ERROR, DB_BUSY,
    │                    ASSET_BUSY, INTERRUPTED, CURSOR_INVALID, ROW_INVALID   -> exit 1/3/4/130
    └── state family     HISTORY_TOO_NEW, HISTORY_CORRUPT, INTERNAL_ERROR, DISK_FULL, SCHEDULER_BROKEN,
                         UNSAFE_PERMISSIONS                                       -> exit 2 / 1

A Problem is data, so the same value can be printed, stored in runs.sqlite and posted to a webhook.
Whether it may be retried is decided where the foreign error is translated (``retryable``), never by
reading message text later.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from croft.core.text import MESSAGE_LIMIT, cut

if TYPE_CHECKING:
    from typing import Any, Literal

    Severity = Literal["error", "warning", "info"]

__all__ = ["CODES", "CroftError", "Problem", "Stopped", "exit_code_for", "problem"]

# code -> (family, exit code). The family decides whether a step failure is the project's fault
# (fix the files) or the run's (maybe try again).
CODES: dict[str, tuple[str, int]] = {
    "CONFIG_INVALID": ("project", 2),
    "NOT_A_PROJECT": ("project", 2),
    "PROJECT_EXISTS": ("project", 2),
    "ASSET_INVALID": ("project", 2),
    "NAME_INVALID": ("project", 2),
    "NAME_CONFLICT": ("project", 2),
    "SCHEDULE_INVALID": ("project", 2),
    "SQL_NOT_SELECT": ("project", 2),
    "SQL_NOT_ONE_STATEMENT": ("project", 2),
    "SQL_ERROR": ("project", 2),
    "INCREMENTAL_WITHOUT_KEY": ("project", 2),
    "HEADER_UNKNOWN_KEY": ("project", 2),
    "SECRET_MISSING": ("project", 2),
    "CYCLE": ("project", 2),
    "UNKNOWN_ASSET": ("project", 2),
    "CLOCK_INVALID": ("project", 2),
    "USAGE": ("project", 2),
    "HTTP_ERROR": ("run", 1),
    "TIMEOUT": ("run", 1),
    "RUN_CRASHED": ("run", 1),
    "ASSET_CODE_ERROR": ("run", 1),
    "CURSOR_INVALID": ("run", 1),
    "ROW_INVALID": ("run", 1),
    "INPUT_NOT_BUILT": ("run", 1),
    "INPUT_FAILED": ("run", 1),
    "CHECK_FAILED": ("run", 3),
    "DB_BUSY": ("run", 4),
    "ASSET_BUSY": ("run", 4),
    "SCHEDULE_HELD": ("run", 4),
    "INTERRUPTED": ("run", 130),
    "HISTORY_TOO_NEW": ("state", 2),
    "HISTORY_CORRUPT": ("state", 2),
    "INTERNAL_ERROR": ("state", 1),
    "INSTALL_FAILED": ("state", 2),
    "UNSAFE_PERMISSIONS": ("state", 2),
    "SCHEDULER_STALE": ("state", 1),
    "JOB_AT_RISK": ("state", 1),
    "ENV_INVALID": ("project", 2),
    "PATH_UNWRITABLE": ("project", 2),
    "DISK_FULL": ("state", 1),
    "SCHEDULE_PAUSED": ("run", 4),
    "SCHEDULE_BACKOFF": ("run", 4),
    "LARGE_REPROCESS": ("run", 4),
    "KNOB_INVALID": ("project", 2),
    "SCHEDULER_BROKEN": ("state", 1),
    "NOTIFY_FAILING": ("state", 1),
    "FRESHNESS_BREACHED": ("state", 1),
    "APPRISE_MISSING": ("project", 2),
    "PORT_IN_USE": ("project", 2),
    "NOTIFY_FAILED": ("state", 1),
    "TABLE_MISSING": ("run", 1),
    "TABLE_CHANGED": ("run", 1),
    "MCP_MISSING": ("project", 2),
    "AGENTS_BLOCK_INVALID": ("project", 2),
    "STATE_DIR_INVALID": ("state", 2),
    "WAREHOUSE_CORRUPT": ("state", 2),
    "CLOCK_MOVED_BACK": ("state", 1),
    "PROJECT_GONE": ("state", 1),
    "HISTORY_LOST": ("state", 1),
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing that is wrong (or worth a word), in the shape every envelope and history row uses.

    An immutable value, changed only through ``with_``."""

    code: str
    message: str
    hint: str
    severity: Severity = "error"
    fix: dict[str, Any] | None = None
    suggestion: str | None = None
    details: dict[str, Any] | None = None
    retryable: bool = False
    asset: str | None = None
    file: str | None = None
    line: int | None = None

    def __post_init__(self) -> None:
        # The last resort of ``core.text``'s rule: a message quoting a huge input never grows with it.
        if len(self.message) > MESSAGE_LIMIT:
            object.__setattr__(self, "message", cut(self.message))
        if len(self.hint) > MESSAGE_LIMIT:
            object.__setattr__(self, "hint", cut(self.hint))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
        }
        for key in ("fix", "suggestion", "details", "asset", "file", "line"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.retryable:
            out["retryable"] = True
        out["docs"] = self.docs
        return out

    @property
    def docs(self) -> str:
        """The command that prints this code's page (docs/errors/CODE.md): what it means and how to fix it."""
        return f"croft docs {self.code}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def with_(self, **changes: Any) -> Problem:
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"not fields of a Problem: {sorted(unknown)}")
        return replace(self, **changes)


def problem(code: str, message: str, hint: str, **extra: Any) -> Problem:
    assert code in CODES, f"unregistered problem code {code}"
    return Problem(code=code, message=message, hint=hint, **extra)


class CroftError(Exception):
    """The only exception croft raises on purpose; the CLI turns it into an envelope."""

    problem: Problem
    extra: list[Problem]

    def __init__(self, code_or_problem: str | Problem, message: str = "", hint: str = "", **extra: Any):
        if isinstance(code_or_problem, Problem):
            self.problem = code_or_problem
        else:
            self.problem = problem(code_or_problem, message, hint, **extra)
        self.extra = []
        super().__init__(self.problem.message)

    @property
    def code(self) -> str:
        return self.problem.code

    @property
    def retryable(self) -> bool:
        return self.problem.retryable

    def __str__(self) -> str:
        return f"{self.problem.code}: {self.problem.message}"

    def __repr__(self) -> str:
        return f"CroftError(problem={self.problem!r}, extra={self.extra!r})"


class Stopped(BaseException):
    """A second Ctrl-C: the run was recorded interrupted and croft ends now, past every clean-up handler.

    A BaseException (like KeyboardInterrupt, but not one) so no ``except Exception`` or
    ``except KeyboardInterrupt`` on the way out can catch it and carry on; the CLI boundary prints it.
    """

    def __init__(self, problem: Problem, data: dict[str, Any]):
        super().__init__(problem.message)
        self.problem = problem
        self.data = data


def exit_code_for(problems: list[Problem]) -> int:
    """Exit code for a set of errors: interrupts win, checks-only is 3, any run failure is 1, else the max."""
    errors = [p for p in problems if p.severity == "error"]
    if not errors:
        return 0
    exits = [CODES.get(p.code, ("state", 1))[1] for p in errors]
    if 130 in exits:
        return 130
    if all(p.code == "CHECK_FAILED" for p in errors):
        return 3
    if 1 in exits:
        return 1
    return max(exits)
