"""The result every command returns and the one JSON envelope it is printed as.

``{"ok", "data", "problems", "next"}`` is a contract scripts rely on; the exit code comes from the result
(0 ok, 1 the work failed, 2 usage or refusal, 3 checks only, 4 busy, 130 interrupted), never from a
literal in a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from croft.core.envelope import envelope
from croft.core.problems import Problem, exit_code_for

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Next", "Result"]


@dataclass(frozen=True)
class Next:
    command: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"command": self.command, "reason": self.reason}


@dataclass(slots=True)
class Result:
    data: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    next: list[Next] = field(default_factory=list)
    ok: bool | None = None
    exit: int | None = None

    @property
    def is_ok(self) -> bool:
        if self.ok is not None:
            return self.ok
        return not any(p.severity == "error" for p in self.problems)

    @property
    def exit_code(self) -> int:
        if self.exit is not None:
            return self.exit
        if self.is_ok:
            return 0
        code = exit_code_for(self.problems)
        return code or 1

    def envelope(self) -> dict[str, Any]:
        return envelope(
            self.is_ok, self.data, [p.to_dict() for p in self.problems], [n.to_dict() for n in self.next]
        )
