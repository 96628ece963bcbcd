"""The one way a test waits for something another process (or thread) does: ask until it holds.

``wait_for(condition, what)`` calls ``condition`` until it returns something truthy and returns that
value, so a test waits on the thing itself (a run row, a log line, a file) and never for a fixed time.
The bound is generous on purpose: a loaded machine is slow, not wrong, and a passing test never waits
for the bound. When it runs out, the failure says what was awaited and what was seen last.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["wait_for"]

T = TypeVar("T")

TIMEOUT = 60.0  # seconds; generous: only a test that is going to fail ever waits this long
EVERY = 0.05  # seconds between two looks
_SHOWN = 2000  # characters of the last value a failure shows


def wait_for(
    condition: Callable[[], T],
    what: str | Callable[[], str],
    *,
    timeout: float = TIMEOUT,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """``condition()``'s first truthy value, asked every 50 ms for up to ``timeout`` seconds.

    ``what`` names what is awaited in the failure ("the second run to start"); a callable is asked only
    then, so the message can carry the state at that moment (a log's tail). An exception of a type in
    ``ignoring`` counts as "not yet" (a database not created yet); any other one fails the wait at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except ignoring as exc:
            last: object = exc
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            said = what() if callable(what) else what
            seen = repr(last)
            if len(seen) > _SHOWN:
                seen = seen[:_SHOWN] + "…"
            raise AssertionError(f"waited {timeout:g} s for {said}; last saw: {seen}")
        time.sleep(EVERY)
