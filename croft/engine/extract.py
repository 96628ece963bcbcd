"""Pull rows out of asset code with a no-progress watchdog: slow is fine, silent is not.

The user's generator runs in a worker thread; the run's own thread waits on a queue for batches and
progress marks (every completed HTTP request is one). When nothing arrives for ``timeout_s`` the step
fails with TIMEOUT. The worker cannot be killed, but it is a daemon and the run's process ends soon after.
Ctrl-C reaches the waiting thread, which is why the wait is a queue with a timeout and not a join.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from croft.core.problems import CroftError

__all__ = ["Extraction"]

_DONE = object()


class Extraction:
    def __init__(self, asset: str, timeout_s: float):
        self.asset = asset
        self.timeout_s = timeout_s
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.rows_so_far = 0
        self.last_request: str | None = None

    def progress(self, what: str | None = None) -> None:
        """Called by ctx.http after each completed request: the step is alive."""
        self._queue.put(("progress", what))

    def run(
        self, produce: Callable[[], Iterable[Any]], on_error: Callable[[BaseException], CroftError]
    ) -> list[dict[str, Any]]:
        def work() -> None:
            try:
                for item in produce():
                    self._queue.put(("item", item))
                self._queue.put(("done", _DONE))
            except BaseException as exc:  # handed to the waiting thread, which decides what it means
                self._queue.put(("error", exc))

        threading.Thread(target=work, name=f"croft-extract-{self.asset}", daemon=True).start()
        rows: list[dict[str, Any]] = []
        started = time.monotonic()
        while True:
            try:
                kind, value = self._queue.get(timeout=self.timeout_s)
            except queue.Empty:
                raise CroftError(
                    "TIMEOUT",
                    f"{self.asset} made no progress for {self.timeout_s:g} s (no row yielded, no request finished)",
                    "Look at `croft logs "
                    + self.asset
                    + "` for the last request; raise timeout= in the decorator"
                    " if the source is just slow between pages.",
                    asset=self.asset,
                    details={
                        "rowsSoFar": self.rows_so_far,
                        "lastRequest": self.last_request,
                        "elapsedMs": int((time.monotonic() - started) * 1000),
                    },
                ) from None
            if kind == "done":
                return rows
            if kind == "error":
                if isinstance(value, CroftError):
                    raise value
                raise on_error(value) from value
            if kind == "progress":
                if value:
                    self.last_request = value
                continue
            batch = value if isinstance(value, list) else [value]
            for row in batch:
                if not isinstance(row, dict):
                    raise CroftError(
                        "ROW_INVALID",
                        f"{self.asset} yielded a {type(row).__name__} where a row (dict) or a batch (list of dicts)"
                        " was expected",
                        'Yield dicts such as {"id": 1, ...}, or lists of them for a batch.',
                        asset=self.asset,
                        details={"rowIndex": len(rows)},
                    )
                rows.append(row)
            self.rows_so_far = len(rows)
