"""A whole-request deadline for the notifiers, and the most of an answer they read.

A socket timeout bounds each wait, not a request: a receiver that drips its answer, or streams a body
that never ends, keeps a client busy for as long as it likes. Every notifier (webhook, Apprise) sends
from a daemon thread the caller stops waiting for at the deadline (the thread ends with the process),
and none of them reads more than ``ANSWER_BYTES`` of what comes back: a notifier needs a status line,
not a body.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["ANSWER_BYTES", "Late", "within"]

ANSWER_BYTES = 4096  # of an answer's body a notifier ever reads
T = TypeVar("T")


class Late(TimeoutError):
    """The whole request did not end within its deadline."""


def within(seconds: float, work: Callable[[], T]) -> T:
    """``work()``'s result, when it returns within ``seconds``; else :class:`Late` (the thread it runs in
    is left to end with the process). Its own exception is raised here."""

    done: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            done.append((True, work()))
        except BaseException as exc:  # handed to the caller, whatever it is
            done.append((False, exc))

    worker = threading.Thread(target=run, name="croft-notify", daemon=True)
    worker.start()
    worker.join(seconds)
    if not done:
        raise Late(f"no whole answer within {seconds:g} s")
    ok, value = done[0]
    if not ok:
        raise value  # type: ignore[misc]
    return value  # type: ignore[return-value]
