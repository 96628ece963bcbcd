"""The one JSON envelope every command prints under ``--json``: ``{"ok", "data", "problems", "next"}``.

Scripts rely on this shape, so it is built here only: by ``Result.envelope`` for the click commands, and
directly by the click-free fast paths (``croft tick``, ``croft tick --all``) and the error boundary,
which must not pay for importing ``Result`` (and ``typing`` with it) on an idle minute.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["dumps", "envelope"]


def envelope(
    ok: bool,
    data: dict[str, Any] | None = None,
    problems: Sequence[dict[str, Any]] = (),
    next: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """The envelope of problems and next steps already in their dict form (``Problem.to_dict``)."""
    return {"ok": ok, "data": data or {}, "problems": list(problems), "next": list(next)}


def dumps(value: Any) -> str:
    """One line of JSON, non-ASCII kept, anything else (a Path, a datetime) as its text."""
    import json

    return json.dumps(value, ensure_ascii=False, default=str)
