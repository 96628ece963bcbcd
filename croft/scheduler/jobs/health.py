"""One link of the scheduler chain: a line of ``croft doctor``, and what SCHEDULER_STALE names when it breaks.

It lives here, below ``control/``, because each job backend returns its own links (``Backend.health``);
``control/chain.py`` orders them with the rest, so doctor and the stale warning say the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Link"]


@dataclass(frozen=True)
class Link:
    check: str  # the name doctor shows ("OS job", "cron daemon", "project <root>", ...)
    ok: bool
    detail: str  # doctor's words, and the end of SCHEDULER_STALE's message when this is the first broken link
    cause: str | None = None  # SCHEDULER_STALE's ``details.cause`` when broken
    fix: str | None = None  # a command that repairs it, when croft knows one
    code: str | None = None  # the problem code doctor reports it with (None: SCHEDULER_BROKEN)

    @classmethod
    def holds(cls, check: str, detail: str) -> Link:
        return cls(check, True, detail)

    @classmethod
    def broken(
        cls, check: str, detail: str, cause: str, fix: str | None = None, code: str | None = None
    ) -> Link:
        return cls(check, False, detail, cause, fix, code)

    def to_json(self) -> dict[str, Any]:
        """Doctor's shape; the cause code travels in SCHEDULER_STALE, not here."""
        return {"check": self.check, "ok": self.ok, "detail": self.detail, "fix": self.fix}
