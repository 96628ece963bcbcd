"""Pull rows out of asset code with a no-progress watchdog: slow is fine, silent is not.

The user's generator runs in a worker thread; the run's own thread waits on a queue for batches and
progress marks (every completed HTTP request is one). When nothing arrives for ``timeout_s`` the step
fails with TIMEOUT. The worker cannot be killed, but it is a daemon and the run's process ends soon after.
Ctrl-C reaches the waiting thread, which is why the wait is a queue with a timeout and not a join.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from croft.core.problems import CroftError

__all__ = ["Extraction"]

_DONE = object()


_CHUNK_ROWS = 1000  # single rows travel from the worker in chunks of up to this many...
_CHUNK_SECONDS = 0.2  # ...or whatever arrived in this long, so a slow source still shows progress
_QUEUE_CHUNKS = 8
_SWITCH_SECONDS = 0.05  # a bound on what waits between the source and the stage: memory stays flat


class Extraction:
    def __init__(self, asset: str, timeout_s: float):
        self.asset = asset
        self.timeout_s = timeout_s
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=_QUEUE_CHUNKS)
        self._stop = threading.Event()
        self.rows_so_far = 0
        self.last_request: str | None = None

    def _put(self, kind: str, value: Any) -> None:
        """Hand something to the waiting thread; gives up once it has stopped listening."""
        while not self._stop.is_set():
            try:
                self._queue.put((kind, value), timeout=0.1)
                return
            except queue.Full:
                continue

    def progress(self, what: str | None = None) -> None:
        """Called by ctx.http after each completed request: the step is alive."""
        self._put("progress", what)

    def stream(
        self, produce: Callable[[], Iterable[Any]], on_error: Callable[[BaseException], CroftError]
    ) -> Iterator[list[Any]]:
        """The source's rows as batches, as they come; what waits in between is bounded."""

        def work() -> None:
            try:
                chunk: list[Any] = []
                sent = time.monotonic()
                for item in produce():
                    if self._stop.is_set():
                        return
                    if isinstance(item, list | tuple):
                        if chunk:
                            self._put("rows", chunk)
                            chunk = []
                        self._put("rows", list(item))
                        sent = time.monotonic()
                        continue
                    chunk.append(item)
                    if len(chunk) >= _CHUNK_ROWS or time.monotonic() - sent >= _CHUNK_SECONDS:
                        self._put("rows", chunk)
                        chunk = []
                        sent = time.monotonic()
                if chunk:
                    self._put("rows", chunk)
                self._put("done", _DONE)
            except BaseException as exc:  # handed to the waiting thread, which decides what it means
                self._put("error", exc)

        threading.Thread(target=work, name=f"croft-extract-{self.asset}", daemon=True).start()
        started = time.monotonic()
        # Source and stage are both Python: with the default 5 ms GIL slice they trade the lock hundreds
        # of times a second, which a busy machine makes dear. Longer slices, for this stream only.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(_SWITCH_SECONDS)
        try:
            while True:
                try:
                    kind, value = self._queue.get(timeout=self.timeout_s)
                except queue.Empty:
                    raise self._timeout(started) from None
                if kind == "done":
                    return
                if kind == "error":
                    if isinstance(value, CroftError):
                        raise value
                    raise on_error(value) from value
                if kind == "progress":
                    if value:
                        self.last_request = value
                    continue
                self.rows_so_far += len(value)
                yield value
        finally:
            sys.setswitchinterval(switch)
            self._stop.set()  # the worker stops at its next row instead of filling a queue nobody reads

    def _timeout(self, started: float) -> CroftError:
        return CroftError(
            "TIMEOUT",
            f"{self.asset} made no progress for {self.timeout_s:g} s (no row yielded, no request finished)",
            "Look at `croft logs " + self.asset + "` for the last request; raise timeout= in the decorator"
            " if the source is just slow between pages.",
            asset=self.asset,
            details={
                "rowsSoFar": self.rows_so_far,
                "lastRequest": self.last_request,
                "elapsedMs": int((time.monotonic() - started) * 1000),
            },
        )
