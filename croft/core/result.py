"""The result every command returns and the one JSON envelope it is printed as.

``{"ok", "data", "problems", "next"}`` is a contract scripts rely on; the exit code comes from the result
(0 ok, 1 the work failed, 2 usage or refusal, 3 checks only, 4 busy, 130 interrupted), never from a
literal in a command.

``Next`` is a NamedTuple and ``Result`` a plain class, not dataclasses: every command (``croft status``
among them) imports this module, and ``dataclasses`` costs more to import than a status's own work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from croft.core.envelope import envelope
from croft.core.problems import Problem, exit_code_for
from croft.core.record import NamedTuple

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Next", "Result"]


class Next(NamedTuple):
    command: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"command": self.command, "reason": self.reason}


class Result:
    __slots__ = ("data", "exit", "next", "ok", "problems")

    def __init__(
        self,
        data: dict[str, Any] | None = None,
        problems: list[Problem] | None = None,
        next: list[Next] | None = None,
        ok: bool | None = None,
        exit: int | None = None,
    ) -> None:
        self.data: dict[str, Any] = {} if data is None else data
        self.problems: list[Problem] = [] if problems is None else problems
        self.next: list[Next] = [] if next is None else next
        self.ok = ok
        self.exit = exit

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
