"""Ctrl-C and SIGTERM during a run: the first stops the run cleanly, a second stops it at once.

:func:`stop_signals` is installed before the run's first wait (the lease wait), so a signal anywhere in
the run — waiting for a lease, pausing between attempts, inside a step — raises ``KeyboardInterrupt`` in
the run's thread, which records the step and the run ``interrupted`` and exits 130. A second signal
while that clean-up is still going calls ``at_once``, which raises ``Stopped`` (a BaseException no
clean-up handler catches): the run unwinds at once, is recorded ``interrupted`` in one short transaction,
and the CLI prints the envelope and exits 130.

``requested()`` lets code that runs inside SQLite (the progress handler) see a stop it cannot raise.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["requested", "stop_signals"]

_state = {"count": 0}


def requested() -> bool:
    """Whether a stop signal arrived during the current run."""
    return _state["count"] > 0


@contextlib.contextmanager
def stop_signals(at_once: Callable[[], None]) -> Iterator[None]:
    """Handle SIGINT and SIGTERM for the block (main thread only; elsewhere the block runs unguarded)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        _state["count"] += 1
        if _state["count"] == 1:
            raise KeyboardInterrupt
        at_once()

    _state["count"] = 0
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        _state["count"] = 0
