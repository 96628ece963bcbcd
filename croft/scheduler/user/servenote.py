"""``<CROFT_HOME>/serve.json``: which ``croft serve`` is alive (its pid and start time, so a recycled pid
is not taken for it).

The per-user minute reads it to know whether the ``--no-os-job`` projects are its to tick this minute,
and doctor reads it to tell whether the chain of such a project is whole. Written by serve at its start
(and again if lost while it runs), removed at its end.
"""

from __future__ import annotations

from pathlib import Path

from croft.core.identity import ProcessIdentity, current, is_alive
from croft.core.jsonfile import read_object, write_atomic
from croft.core.paths import croft_home

__all__ = ["NOTE", "serve_alive", "serve_path", "write_serve"]

NOTE = "serve.json"


def serve_path(home: str | Path | None = None) -> Path:
    return Path(home or croft_home()) / NOTE


def write_serve(home: str | Path | None = None) -> None:
    write_atomic(serve_path(home), current().to_dict())


def serve_alive(home: str | Path | None = None) -> bool:
    note = read_object(serve_path(home))
    if not note or not isinstance(note.get("pid"), int):
        return False
    who = ProcessIdentity(pid=note["pid"], start=note.get("procStart"), boot=note.get("bootId"))
    return is_alive(who)
