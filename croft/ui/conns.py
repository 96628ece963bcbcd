"""The page's connections, bounded: a cap on how many are open, a deadline for a request's header,
and room for the owner when strangers (or a stuck client) hold the rest.

A browser sends its request as soon as it connects; a connection that has sent no whole header
within ``HEADER_S`` is dropped, and when the cap is reached the oldest of those waiting for a header
makes room for the new one. So a flood of idle connections costs at most the cap in descriptors and
threads, and the owner's next request (whose header comes at once) is still answered. When the
process runs out of descriptors anyway, the listener backs off for a moment instead of spinning.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import threading
import time
from dataclasses import dataclass

__all__ = ["HEADER_S", "Connections", "cap_for"]

HEADER_S = 10.0
MOST = 64
STREAMS = 32  # open event streams (pages); beyond them a page refreshes itself instead


def cap_for(most: int = MOST) -> int:
    """The cap: ``most``, or a quarter of the descriptors this process may open, whichever is less."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return most
    return max(4, min(most, soft // 4))


@dataclass
class _Open:
    since: float
    answering: bool = False  # a whole header came: it is someone's request, never dropped for room


class Connections:
    def __init__(self, cap: int | None = None, header_s: float = HEADER_S) -> None:
        self.cap = cap or cap_for()
        self.header_s = header_s
        self._open: dict[socket.socket, _Open] = {}
        self._lock = threading.Lock()
        self.streams = 0

    def admit(self, sock: socket.socket) -> None:
        """A new connection: when the cap is reached, the oldest still waiting for a header goes."""
        with self._lock:
            if len(self._open) >= self.cap:
                self._drop_oldest_waiting()
            self._open[sock] = _Open(time.monotonic())

    def answering(self, sock: socket.socket) -> None:
        with self._lock:
            found = self._open.get(sock)
            if found is not None:
                found.answering = True

    def waiting(self, sock: socket.socket) -> None:
        """Between two requests on one connection: waiting for a header again, with a new deadline."""
        with self._lock:
            found = self._open.get(sock)
            if found is not None:
                found.answering, found.since = False, time.monotonic()

    def gone(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.pop(sock, None)

    def open_stream(self) -> bool:
        with self._lock:
            if self.streams >= STREAMS:
                return False
            self.streams += 1
            return True

    def close_stream(self) -> None:
        with self._lock:
            self.streams -= 1

    def reap(self) -> None:
        """Drop every connection past its header deadline (a slow sender gets no more than a quick one)."""
        cut = time.monotonic() - self.header_s
        with self._lock:
            late = [s for s, o in self._open.items() if not o.answering and o.since < cut]
        for sock in late:
            _hang_up(sock)

    def starved(self) -> None:
        """``accept`` failed for want of descriptors: make room, and let the listener wait a moment."""
        with self._lock:
            self._drop_oldest_waiting()
        time.sleep(0.05)

    def count(self) -> int:
        with self._lock:
            return len(self._open)

    def _drop_oldest_waiting(self) -> None:
        waiting = [(o.since, id(s), s) for s, o in self._open.items() if not o.answering]
        if waiting:
            _hang_up(min(waiting)[2])

    def hang_up_all(self) -> None:
        with self._lock:
            found = list(self._open)
        for sock in found:
            _hang_up(sock)


def _hang_up(sock: socket.socket) -> None:
    """End a connection from here: its thread's read returns at once and the thread ends."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
