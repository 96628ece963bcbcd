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
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from croft.core.problems import CroftError

__all__ = ["Extraction", "Stream"]

_DONE = object()
_BATCH = (list, tuple)


_CHUNK_ROWS = 1000  # single rows travel from the worker in chunks of up to this many...
_CHUNK_SECONDS = 0.2  # ...or whatever arrived in this long, so a slow source still shows progress
_QUEUE_CHUNKS = 8
_SWITCH_SECONDS = 0.05  # a bound on what waits between the source and the stage: memory stays flat
_SINK_ROWS = 2000  # a pumped batch is handed to the sink in slices this long, so a stop waits for one


class _Stopped(Exception):
    """The waiting thread has stopped listening: the worker leaves without another row."""


class _SinkFailed(Exception):
    """The stage failed, not the source: its error goes to the waiting thread as it is (a SQLite error
    is then named as the warehouse's, not blamed on the asset's code)."""

    def __init__(self, error: BaseException):
        super().__init__(error)
        self.error = error


class Extraction:
    def __init__(self, asset: str, timeout_s: float):
        self.asset = asset
        self.timeout_s = timeout_s
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=_QUEUE_CHUNKS)
        self._stop = threading.Event()
        self._sink_lock = threading.Lock()  # held by the worker while it stages a slice (pump mode)
        self._sinking = False
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
        self,
        produce: Callable[[], Iterable[Any]],
        on_error: Callable[[BaseException], CroftError],
        sample: list[Any] | None = None,
        sample_rows: int = 0,
    ) -> Stream:
        """The source's rows as batches (the first ``sample_rows`` of them copied into ``sample``)."""
        return Stream(self, produce, on_error, sample, sample_rows)

    def _run(
        self,
        stream: Stream,
        hand: Callable[[list[Any]], None],
    ) -> Iterator[list[Any]]:
        """Start the worker, then wait for what it sends: batches (``hand`` puts them on the queue) or
        counts of rows it staged itself (``hand`` is the sink). Yields the batches; ends at the source's
        end; raises its error, or TIMEOUT when nothing arrives for ``timeout_s``."""

        def work() -> None:
            # The per-row path is kept short (it runs once per row the source yields): a row is
            # appended, the clock read; the stop flag is read at each hand-over.
            stopped = self._stop.is_set
            clock = time.monotonic
            try:
                chunk: list[Any] = []
                sent = clock()
                for item in stream.produce():
                    if type(item) is not dict and isinstance(item, _BATCH):
                        if chunk:
                            hand(chunk)
                            chunk = []
                        hand(list(item))
                        sent = clock()
                    else:
                        chunk.append(item)
                        if len(chunk) < _CHUNK_ROWS and clock() - sent < _CHUNK_SECONDS:
                            continue
                        hand(chunk)
                        chunk = []
                        sent = clock()
                    if stopped():
                        return
                if chunk:
                    hand(chunk)
                self._put("done", _DONE)
            except _Stopped:
                return
            except _SinkFailed as failed:
                self._put("raise", failed.error)
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
                    if self._sinking:  # staging a large batch is progress too
                        continue
                    raise self._timeout(started) from None
                if kind == "done":
                    return
                if kind == "raise":
                    raise value
                if kind == "error":
                    if isinstance(value, CroftError):
                        raise value
                    raise stream.on_error(value) from value
                if kind == "progress":
                    if value:
                        self.last_request = value
                    continue
                if kind == "staged":
                    self.rows_so_far += value
                    continue
                self.rows_so_far += len(value)
                stream.keep_sample(value)
                yield value
        finally:
            sys.setswitchinterval(switch)
            with self._sink_lock:  # a slice being staged ends first; then the worker stages no more
                self._stop.set()  # the worker stops at its next hand-over instead of filling a queue nobody reads

    def _pump(self, stream: Stream, sink: Callable[[list[Any]], None]) -> None:
        """The worker stages every batch itself (``sink``) while this thread only watches: the rows
        never cross threads, and the two threads do not take turns on the GIL row by row (measured:
        a fifth of an ingest's time on two cores). The sink's connection is this thread's; it is safe
        because this thread waits, and takes the lock before it touches the connection again."""

        def hand(batch: list[Any]) -> None:
            stream.keep_sample(batch)
            for at in range(0, len(batch), _SINK_ROWS):
                part = batch if len(batch) <= _SINK_ROWS else batch[at : at + _SINK_ROWS]
                with self._sink_lock:
                    if self._stop.is_set():
                        raise _Stopped
                    self._sinking = True
                    try:
                        sink(part)
                    except CroftError:
                        raise
                    except BaseException as exc:
                        raise _SinkFailed(exc) from exc
                    finally:
                        self._sinking = False
                self._put("staged", len(part))

        deque(self._run(stream, hand), maxlen=0)  # nothing is yielded: the worker sends only counts

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


class Stream:
    """The rows of one source, taken by iterating (batches arrive in this thread) or by ``pump(sink)``
    (the source's own thread stages them; what the warehouse's stage does, see Stage.feed)."""

    def __init__(
        self,
        extraction: Extraction,
        produce: Callable[[], Iterable[Any]],
        on_error: Callable[[BaseException], CroftError],
        sample: list[Any] | None,
        sample_rows: int,
    ):
        self.extraction = extraction
        self.produce = produce
        self.on_error = on_error
        self.sample = sample
        self.sample_rows = sample_rows

    def keep_sample(self, batch: list[Any]) -> None:
        """The first rows, kept for a preview's sample."""
        if self.sample is not None and len(self.sample) < self.sample_rows:
            self.sample.extend(batch[: self.sample_rows - len(self.sample)])

    def __iter__(self) -> Iterator[list[Any]]:
        return self.extraction._run(self, lambda batch: self.extraction._put("rows", batch))

    def pump(self, sink: Callable[[list[Any]], None]) -> None:
        self.extraction._pump(self, sink)
