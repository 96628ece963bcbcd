"""The per-user tick log ``<CROFT_HOME>/logs/tick.log``: what the OS job, serve and the project ticks say.

The OS job appends croft's own output to it (the crontab line, plist and unit all name this path), the
per-user tick and serve write a line per project they start, and a project tick writes the one line a
wake-up after sleep deserves. ``croft doctor`` and SCHEDULER_STALE quote its tail as evidence.

Many projects tick in the same minute into this one file, so every line about a project names it
(``project_names``: the folder's name, or the whole path where two registered projects share one), and
a project tick started for a freed slot (``croft tick --log-as NAME``) or by a worker writes everything it
prints, tracebacks included, as whole lines ``<ISO now> NAME: …`` (``NamedLines``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.paths import path_text
from croft.core.private import open_append

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import IO

__all__ = [
    "ROTATE_BYTES",
    "TAIL_LINES",
    "NamedLines",
    "TickLog",
    "log_tail",
    "project_names",
    "tick_log_path",
]

ROTATE_BYTES = 5 * 1024 * 1024
TAIL_LINES = 20
TAIL_BYTES = 64 * 1024
_PARTS = ("logs", "tick.log")  # under CROFT_HOME


def tick_log_path(home: str | os.PathLike[str]) -> Path:
    return Path(home, *_PARTS)


class TickLog:
    """The log, rotated to ``tick.log.1`` past 5 MB; lines ``<ISO now> <message>``; the file 0600."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)

    @classmethod
    def of(cls, home: str | os.PathLike[str]) -> TickLog:
        return cls(path_text(home, *_PARTS))

    def rotate(self) -> None:
        try:
            if os.stat(self.path).st_size > ROTATE_BYTES:
                os.replace(self.path, self.path + ".1")
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
                raise OSError(exc.errno, exc.strerror, self.path) from exc
            raise


def project_names(roots: Iterable[str]) -> dict[str, str]:
    """Each registered project's name in the tick log: its folder's name, short, or its whole path where
    another registered project's folder has the same name, so two projects' lines always read apart."""
    listed = list(roots)
    seen: dict[str, int] = {}
    for root in listed:
        base = os.path.basename(root.rstrip("/")) or root
        seen[base] = seen.get(base, 0) + 1
    out = {}
    for root in listed:
        base = os.path.basename(root.rstrip("/")) or root
        out[root] = base if seen[base] == 1 else root
    return out


class NamedLines:
    """A text stream for a project tick's stdout and stderr when both are the tick log: each line it is
    given becomes ``<ISO now> <name>: <line>``, written whole with one ``write`` on the O_APPEND
    descriptor, so lines of ticks writing at the same moment never cut into each other. ``stamp`` gives
    the time (the clock's, a callable, so this module imports no clock)."""

    encoding = "utf-8"
    errors = "backslashreplace"

    def __init__(self, fd: int, name: str, stamp: Callable[[], str]) -> None:
        self.fd, self.name, self.stamp = fd, name, stamp
        self.pending = ""

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self._out(lines)
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self._out([self.pending])
            self.pending = ""

    def _out(self, lines: list[str]) -> None:
        try:
            stamp = self.stamp()
        except Exception:  # a clock that cannot be read (a bad CROFT_NOW) must not lose the line telling it
            stamp = "-"
        data = "".join(f"{stamp} {self.name}: {line}\n" for line in lines)
        try:
            os.write(self.fd, data.encode(self.encoding, self.errors))
        except OSError:  # a full disk: the tick goes on, as with any log
            return

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.fd

    def writable(self) -> bool:
        return True


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
