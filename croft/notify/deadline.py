"""The notifiers' bounds: the socket timeout the knob sets, a whole deadline per request or per batch,
and the most of an answer they read.

A socket timeout bounds each wait, not a request: a name lookup that hangs, or a receiver that drips
its answer, keeps a client busy for as long as it likes. So every notifier (webhook, Apprise, the
pings) sends from daemon threads the caller stops waiting for at the deadline (a thread left behind
ends with the process), and none of them reads more than ``ANSWER_BYTES`` of what comes back: a
notifier needs a status line, not a body.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from croft.core import knobs

__all__ = ["ANSWER_BYTES", "TIMEOUT_ENV", "Late", "Unbegun", "each_within", "timeout_seconds", "within"]

ANSWER_BYTES = 4096  # of an answer's body a notifier ever reads
TIMEOUT_ENV = "CROFT_NOTIFY_TIMEOUT_MS"
T = TypeVar("T")


class Late(TimeoutError):
    """The whole request did not end within its deadline."""


class Unbegun(Late):
    """The request of a batch never began: the others held the batch until its deadline."""


def timeout_seconds(default: float) -> float:
    """``CROFT_NOTIFY_TIMEOUT_MS`` when set (every notifier shares it), else ``default``."""
    configured = knobs.value(TIMEOUT_ENV)
    return default if configured is None else float(configured) / 1000


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


def each_within(
    seconds: float, chains: Sequence[Sequence[Callable[[], T]]], at_once: int
) -> list[list[T | Late]]:
    """Each work's result, chain by chain: ``at_once`` chains run side by side, the works of one chain one
    after another in one thread (so they can share what that thread holds, a connection), all within one
    deadline of ``seconds`` from now. A work still running then is a :class:`Late` saying so, one not
    begun an :class:`Unbegun` (the threads are left to end with the process). A work must not raise."""
    results: list[list[T | Late]] = [[Unbegun(f"not begun within {seconds:g} s")] * len(c) for c in chains]
    lock = threading.Lock()
    all_done = threading.Event()
    left = [sum(len(chain) for chain in chains)]
    queue = list(range(len(chains)))
    queue.reverse()  # popped from the end: the first begins first

    def run() -> None:
        while True:
            with lock:
                if not queue or all_done.is_set():
                    return
                c = queue.pop()
            for i, work in enumerate(chains[c]):
                with lock:
                    if all_done.is_set():
                        return
                    results[c][i] = Late(f"no whole answer within {seconds:g} s")
                result = work()
                with lock:
                    results[c][i] = result
                    left[0] -= 1
                    if not left[0]:
                        all_done.set()

    if left[0]:
        for _ in range(min(at_once, len(chains))):
            threading.Thread(target=run, name="croft-notify", daemon=True).start()
        all_done.wait(seconds)
    with lock:
        all_done.set()  # a thread still at work takes no more
        return [list(chain) for chain in results]
