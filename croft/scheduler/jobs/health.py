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
    warn: bool = False  # it holds (the scheduler runs), but something a person relies on does not: a ⚠
    hint: str | None = None  # a warning's hint (a broken link's is doctor's own)

    @classmethod
    def holds(cls, check: str, detail: str) -> Link:
        return cls(check, True, detail)

    @classmethod
    def broken(
        cls, check: str, detail: str, cause: str, fix: str | None = None, code: str | None = None
    ) -> Link:
        return cls(check, False, detail, cause, fix, code)

    @classmethod
    def warns(
        cls, check: str, detail: str, cause: str, fix: str | None, hint: str, code: str | None = None
    ) -> Link:
        """A link that holds for the scheduler (``ok``: never SCHEDULER_STALE's cause, doctor exits 0) but
        is shown as a warning, with its hint and fix."""
        return cls(check, True, detail, cause, fix, code, warn=True, hint=hint)

    def to_json(self) -> dict[str, Any]:
        """Doctor's shape; the cause code travels in SCHEDULER_STALE, not here. A warning says so."""
        out = {"check": self.check, "ok": self.ok, "detail": self.detail, "fix": self.fix}
        if self.warn:
            out["warning"] = True
        return out
