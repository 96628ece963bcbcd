"""The per-user tick log ``<CROFT_HOME>/logs/tick.log``: what the OS job, serve and the project ticks say.

The OS job appends croft's own output to it (the crontab line, plist and unit all name this path), the
per-user tick and serve write a line per project they start, and a project tick writes the one line a
wake-up after sleep deserves. ``croft doctor`` and SCHEDULER_STALE quote its tail as evidence.
"""

from __future__ import annotations

import os
from pathlib import Path

from croft.core.private import open_append

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

__all__ = ["ROTATE_BYTES", "TAIL_LINES", "TickLog", "log_tail", "tick_log_path"]

ROTATE_BYTES = 5 * 1024 * 1024
TAIL_LINES = 20
TAIL_BYTES = 64 * 1024


def tick_log_path(home: Path) -> Path:
    return home / "logs" / "tick.log"


class TickLog:
    """The log, rotated to ``tick.log.1`` past 5 MB; lines ``<ISO now> <message>``; the file 0600."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def of(cls, home: Path) -> TickLog:
        return cls(tick_log_path(home))

    def rotate(self) -> None:
        try:
            if self.path.stat().st_size > ROTATE_BYTES:
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        except FileNotFoundError:
            pass

    def open(self) -> IO[bytes]:
        return os.fdopen(open_append(self.path), "ab", buffering=0)

    def write(self, stamp: str, message: str) -> None:
        try:
            with self.open() as out:
                out.write(f"{stamp} {message}\n".encode())
        except OSError as exc:
            if exc.filename is None:  # a write on a full disk: say which file
                raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
            raise


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines (from the last 64 KiB); none when the log cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]
