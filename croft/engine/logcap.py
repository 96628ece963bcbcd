"""How much of a step's output its log keeps: the head and the tail, and a line saying how much was cut.

An asset that prints 200 MB once stored a 216 MB step log (and ``croft logs`` read it whole). The log
keeps the first ``HEAD_BYTES`` as they come (on disk at once, so a crash leaves them), the last
``TAIL_BYTES`` in memory until the step ends, and between them one line that says how many lines and
bytes were cut. A single line longer than ``LINE_CHARS`` keeps its start and says how much it lost. The
errors and the summary a step ends with are in the tail, which is what ``croft logs`` shows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ["HEAD_BYTES", "LINE_CHARS", "TAIL_BYTES", "CappedLog", "cut_line"]

HEAD_BYTES = 2 * 1024 * 1024
TAIL_BYTES = 2 * 1024 * 1024
LINE_CHARS = 64 * 1024


def cut_line(text: str, limit: int = LINE_CHARS) -> str:
    """One line of output, at most ``limit`` characters, saying how many it lost."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit} more characters cut)"


def _size(count: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


class CappedLog:
    """Lines (each ending in a newline) go to ``write``: the first ``head`` bytes at once, the last
    ``tail`` bytes at ``close``, a note of what was cut between them. ``stamp`` gives the note its time."""

    def __init__(
        self,
        write: Callable[[str], None],
        stamp: Callable[[], str],
        head: int = HEAD_BYTES,
        tail: int = TAIL_BYTES,
    ) -> None:
        self._write, self._stamp = write, stamp
        self._head, self._head_left, self._tail_cap = head, head, tail
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self.cut_lines = 0
        self.cut_bytes = 0

    def add(self, line: str) -> None:
        size = len(line.encode("utf-8", "replace"))
        if self._head_left > 0:
            self._head_left -= size
            self._write(line)
            return
        self._tail.append(line)
        self._tail_size += size
        while self._tail_size > self._tail_cap and len(self._tail) > 1:
            gone = len(self._tail.popleft().encode("utf-8", "replace"))
            self._tail_size -= gone
            self.cut_lines += 1
            self.cut_bytes += gone

    def close(self) -> None:
        if self.cut_lines:
            lines = "line" if self.cut_lines == 1 else "lines"
            self._write(
                f"{self._stamp()} … {self.cut_lines} {lines} ({_size(self.cut_bytes)}) of output cut here: a step's"
                f" log keeps its first {_size(self._head)} and its last {_size(self._tail_cap)} …\n"
            )
        while self._tail:
            self._write(self._tail.popleft())
        self._tail_size = 0
