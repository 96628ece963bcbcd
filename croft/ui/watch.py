"""When the page must change: a signature of what the shown projects' state folders hold, compared
every half second by one thread, so any number of open pages cost one ``stat`` round.

A project's whole state is in its state folder: ``runs.sqlite`` and its WAL (runs, steps, the setting,
the heartbeat's row), the idle heartbeat stamp, and the step logs under ``logs/`` while a run writes
them. The folder's files and the logs of the runs going now are looked at by size and modification
time only; nothing is read.

A reader must never wake the pages: opening ``runs.sqlite`` (as every ``croft status`` and the page's
own look do) creates its ``-shm`` and an empty ``-wal``, and the last reader to close removes them.
So the ``-shm`` is not looked at, and an empty WAL counts as none: only a write (a WAL with frames,
or a checkpoint into the database file) changes the signature. Nothing else wakes a page either: no
timer sends a change, the page moves its "in 3 min" itself.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["Watcher", "signature"]

POLL_S = 0.5
QUIET_S = 30.0  # how long an event stream waits before it writes a comment (a dead page shows then)
_READER_LEFTOVERS = ("-shm", "-journal")


def _stats(folder: Path, prefixes: tuple[str, ...] = ()) -> list[tuple[str, int, int]]:
    out = []
    try:
        with os.scandir(folder) as found:
            for entry in found:
                if prefixes and not entry.name.startswith(prefixes):
                    continue
                if entry.name.endswith(_READER_LEFTOVERS):
                    continue
                try:
                    st = entry.stat()
                except OSError:
                    continue
                if entry.is_dir():
                    continue
                if entry.name.endswith("-wal") and st.st_size == 0:
                    continue  # an empty WAL is what a reader leaves: the same as none
                out.append((entry.name, st.st_mtime_ns, st.st_size))
    except OSError:
        out.append((str(folder), -1, -1))  # gone or unreadable: a change too, the page will say why
    return sorted(out)


def signature(state_dirs: Iterable[Path], running: Iterable[str] = ()) -> tuple[object, ...]:
    """What changes when anything a page shows changes: the state folders' files, and the step logs of
    the runs named in ``running`` (their names start with the run id)."""
    ids = tuple(f"{r}." for r in running)
    return tuple(
        (str(d), tuple(_stats(d)), tuple(_stats(d / "logs", ids)) if ids else ()) for d in state_dirs
    )


def _files(paths: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for path in paths:
        try:
            st = path.stat()
            out.append((str(path), st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((str(path), -1, -1))
    return tuple(out)


SOURCE_EVERY = 4  # the projects' own files (croft.json, assets/, lib/) are looked at every 4th round


def sources(roots: Iterable[Path]) -> tuple[object, ...]:
    """What a person edits that the page shows (an asset's description, schedule, a hold on new code):
    each project's croft.json and the files of its assets/ and lib/ folders, by size and time."""
    out: list[object] = []
    for root in roots:
        try:
            st = (root / "croft.json").stat()
            out.append((str(root), st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((str(root), -1, -1))
        for sub in ("assets", "lib"):
            out.append(tuple(_stats(root / sub)))
    return tuple(out)


class Watcher:
    """One thread that bumps ``generation`` whenever :func:`signature` changes, and wakes the waiting
    event streams. ``folders`` is asked at each look (a project may be registered meanwhile)."""

    def __init__(
        self,
        folders: Callable[[], list[Path]],
        running: Callable[[], list[str]],
        roots: Callable[[], list[Path]] = list,
        files: Callable[[], list[Path]] = list,
    ) -> None:
        self.generation = 0  # what the pages follow: the folders' changes and the server's own pokes
        self.files = 0  # the folders' changes alone: what a look of them depends on
        self._folders, self._running, self._roots, self._files = folders, running, roots, files
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="croft-ui-watch", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._changed:
            self._changed.notify_all()

    def _look(self, last: tuple[object, ...] | None, round_: int) -> tuple[object, ...]:
        try:
            state = (signature(self._folders(), self._running()), _files(self._files()))
            if last is not None and round_ % SOURCE_EVERY and len(last) == 2:
                return (state, last[1])  # the sources as last seen: not their round
            return (state, sources(self._roots()))
        except Exception as exc:  # a registry that cannot be read right now: a change, shown by the page
            return (repr(exc),)

    def _loop(self) -> None:
        last = self._look(None, 0)
        for round_ in itertools.count(1):
            if self._stop.wait(POLL_S):
                return
            now = self._look(last, round_)
            if now != last:
                last = now
                with self._changed:
                    self.files += 1
                    self.generation += 1
                    self._changed.notify_all()

    def poke(self) -> None:
        """Something the page shows changed outside the state folders (doctor's look, an action)."""
        with self._changed:
            self.generation += 1
            self._changed.notify_all()

    def wait(self, seen: int, timeout: float = QUIET_S) -> int:
        """The generation after ``seen``, or ``seen`` again after ``timeout`` (or when stopped)."""
        with self._changed:
            self._changed.wait_for(lambda: self.generation != seen or self._stop.is_set(), timeout)
            return self.generation

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()
