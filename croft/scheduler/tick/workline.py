"""The line that hands one project to a project tick worker (``croft tick --batch``): written by the per-user
tick (``scheduler.user.fulltick``), read by the worker (``scheduler.tick.batch``). Imports only json, so the
per-user tick pays nothing for it."""

from __future__ import annotations

import json

__all__ = ["ask", "asked"]


def ask(root: str, name: str) -> bytes:
    """The line asking for the tick of ``root``, named ``name`` in the tick log."""
    return json.dumps({"root": root, "name": name}).encode() + b"\n"


def asked(line: str) -> tuple[str, str] | None:
    """(root, name) of a line ``ask`` wrote; None for any other line."""
    try:
        found = json.loads(line)
    except ValueError:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("root"), str) or not found["root"]:
        return None
    name = found.get("name")
    return found["root"], name if isinstance(name, str) and name else found["root"]
