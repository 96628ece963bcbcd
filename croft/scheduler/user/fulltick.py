"""The minute's full project ticks, a few at a time: what ``croft tick --all`` cannot settle in-process.

A project whose idle check does not hold needs the real project tick. Starting one interpreter per
such project, all at once, made the first minute of 1,000 projects (a fresh install, an upgrade: no
memo anywhere) take 94 s on two cores and put a thousand processes on the machine. Instead at most
``WORKERS`` workers (``croft tick --batch``, ``scheduler.tick.batch``) are started, each in its own
session with a croft child's environment like any project tick, and each is handed the next project
as soon as it answers the last: one interpreter's start for many projects, and never more than a few
project ticks alive. Every project is still ticked alone, in its folder, by the one project tick.

A project tick that has not answered within ``ANSWER_WITHIN_S`` is left to finish on its own (its
worker gets no more projects and exits after it), so one hanging project cannot hold the minute; a
worker that dies is replaced for the projects left. Nothing here raises for a project's sake.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from croft.scheduler.tick.start import start_tick_worker
from croft.scheduler.tick.workline import ask

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import IO, Any

__all__ = ["ANSWER_WITHIN_S", "WORKERS", "full_ticks"]

WORKERS = 2  # project ticks alive at once: each is CPU-bound, and the machine has its own work
ANSWER_WITHIN_S = 45.0


@dataclass
class _Worker:
    """One tick worker process, the project it is ticking now (None between projects) and since when."""

    proc: subprocess.Popen[bytes]
    root: str | None = None
    since: float = 0.0


def full_ticks(
    roots: list[str],
    cwd: str,
    log: IO[bytes],
    env: dict[str, str],
    started: Callable[[str, int], None],
    name_of: Callable[[str], str] = str,
    workers: int = WORKERS,
) -> dict[str, dict[str, Any]]:
    """Tick each of ``roots`` in a worker; ``started(root, pid)`` as each is handed over; ``name_of``: a
    root's name in the tick log. Returns each root's answer (``{root, exited, ping, error, pid}``); a
    root with no answer has an ``error``."""
    if not roots:
        return {}

    pending = list(roots)
    answers: dict[str, dict[str, Any]] = {}
    chooser = selectors.DefaultSelector()
    busy: list[_Worker] = []

    def hire() -> _Worker | None:
        try:
            proc = start_tick_worker(cwd, log, env)
        except OSError as exc:
            for root in pending:
                answers[root] = {"root": root, "error": f"its tick could not start: {exc.strerror or exc}"}
            pending.clear()
            return None
        worker = _Worker(proc)
        chooser.register(proc.stdout, selectors.EVENT_READ, worker)  # type: ignore[arg-type]
        return worker

    def give(worker: _Worker) -> None:
        """The next project, or the end of its input (it exits when its last tick is done)."""
        while pending:
            root = pending.pop(0)
            try:
                worker.proc.stdin.write(ask(root, name_of(root)))  # type: ignore[union-attr]
                worker.proc.stdin.flush()  # type: ignore[union-attr]
            except OSError:  # it died: the project goes to the next worker
                pending.insert(0, root)
                retire(worker)
                return
            worker.root, worker.since = root, time.monotonic()
            busy.append(worker)
            started(root, worker.proc.pid)
            return
        retire(worker)

    def retire(worker: _Worker) -> None:
        if worker in busy:
            busy.remove(worker)
        with contextlib.suppress(KeyError, ValueError):
            chooser.unregister(worker.proc.stdout)  # type: ignore[arg-type]
        for stream in (worker.proc.stdin, worker.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
        worker.proc.returncode = 0  # never waited for: it ends on its own and init reaps it

    for _ in range(min(workers, len(pending))):
        worker = hire()
        if worker is None:
            break
        give(worker)
    while busy:
        wait = min(w.since + ANSWER_WITHIN_S for w in busy) - time.monotonic()
        for key, _ in chooser.select(timeout=max(0.0, wait)):
            worker = key.data
            line = worker.proc.stdout.readline()
            root = worker.root
            busy.remove(worker)
            worker.root = None
            if not line:  # the worker ended (killed, crashed): its project has no answer
                if root is not None:
                    answers[root] = {"root": root, "error": "its tick ended without an answer"}
                retire(worker)
                if pending:
                    replacement = hire()
                    if replacement is not None:
                        give(replacement)
                continue
            answer = _answer(line, root)
            answer["pid"] = worker.proc.pid
            answers[str(answer.get("root") or root)] = answer
            give(worker)
        now = time.monotonic()
        for worker in [w for w in busy if now - w.since >= ANSWER_WITHIN_S]:
            root = worker.root or ""
            answers[root] = {"root": root, "error": f"no answer within {ANSWER_WITHIN_S:g} s; left to finish"}
            retire(worker)
            if pending:
                replacement = hire()
                if replacement is not None:
                    give(replacement)
    chooser.close()
    return answers


def _answer(line: bytes, root: str | None) -> dict[str, Any]:
    try:
        answer = json.loads(line)
    except ValueError:
        return {"root": root, "error": f"its tick answered {line[:200]!r}"}
    return answer if isinstance(answer, dict) else {"root": root, "error": "its tick answered no object"}
