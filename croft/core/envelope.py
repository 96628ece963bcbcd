"""The one JSON envelope every command prints under ``--json``: ``{"ok", "data", "problems", "next"}``.

Scripts rely on this shape, so it is built here only: by ``Result.envelope`` for most commands, and
directly by the tick's commands (``croft tick``, ``croft tick --all``) and the error boundary.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

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
    """One line of JSON, non-ASCII kept, anything else (a Path, a datetime) as its text. JSON escapes the
    C0 controls itself; DEL, the C1 controls and the bidirectional overrides are escaped too (``\\u009b``),
    so an envelope printed to a terminal is as inert as the human text (``core.text.for_terminal``)."""

    return json.dumps(value, ensure_ascii=False, default=str).translate(_JSON_ESCAPED)


_JSON_ESCAPED = {
    c: f"\\u{c:04x}"
    for c in (0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}
