"""The wake file the full per-user tick leaves for the minute gate (``scheduler.user.gate``).

Written only after a minute in which every project of the registry was either only beaten (its idle
check held, no run, no ping) or ticks from ``croft serve``, nothing was logged and no problem was found;
any other minute removes it, so the next minute is a full tick again. The stamps are taken at the start
of the minute, before any project was looked at: a file that moves while the minute works is seen by
the next one. A stamp newer than ``RACY_NS`` is not trusted (a second write inside the same clock tick
could leave it as it was), and a path that cannot be written on one line (a newline in it) leaves no
wake file at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable

from croft.scheduler.incidents import FOLDER, incident_path
from croft.scheduler.user.gate import FILE, KINDS, MAGIC, knob_line
from croft.scheduler.user.trusted import HOME_FILES, PART_NAMES

__all__ = ["Stamps", "forget", "write"]

RACY_NS = 50_000_000
FIXED = (".croft/runs.sqlite",)
WALS = (".croft/runs.sqlite-wal",)
TRUST_ONLY = frozenset({".croft"})  # its mtime moves with every reader's -wal and -shm: the files say more
# croft's own minute files: rewritten by the minute itself, so only who owns them and their mode count
REWRITTEN = frozenset({"", "logs", "tick-all.lock", "idle-beats.json", "tick-cache.json", "idle-cache.json"})


class Stamps:
    """The stamps of the minute's start: croft's home and, per project with an idle memo, what it reads."""

    def __init__(self, home: str, registry_path: str, projects: dict[str, tuple[list[str], list[str]]]):
        self.racy = time.time_ns() - RACY_NS
        self.home = home
        self.lines: list[str] = []
        self.projects = projects
        self.safe = True
        self._add("s", registry_path)
        for name in HOME_FILES:
            if name not in REWRITTEN:
                self._add("s", f"{home}/{name}")
        self._add("w", f"{home}/slots.sqlite-wal")
        self._add("s", f"{home}/{FOLDER}")
        for root, (folders, files) in projects.items():
            self._project(root, folders, files)

    def _project(self, root: str, folders: list[str], files: list[str]) -> None:
        names = dict.fromkeys([*PART_NAMES, *FIXED, *folders, *files])
        for name in names:
            self._add("t" if name in TRUST_ONLY else "s", f"{root}/{name}" if name else root)
        for name in WALS:
            self._add("w", f"{root}/{name}")
        self._add("s", incident_path(root, self.home))

    def _add(self, kind: str, path: str) -> None:
        if "\n" in path or "\t" in path:
            self.safe = False
            return
        try:
            line = KINDS[kind](path)
        except OSError:
            self.safe = False
            return
        if kind != "t" and line != "-" and int(line.rsplit(" ", 1)[1]) > self.racy:
            self.safe = False
        self.lines.append(f"{kind}{line}\t{path}")


def write(stamps: Stamps, after: str, until: str, roots: Iterable[str], disks: Iterable[str]) -> None:
    """The wake file, written whole (temp and rename); on any failure there is none."""
    roots = list(roots)
    for name in REWRITTEN:  # croft's own files, as the minute leaves them: who owns them, their mode
        stamps._add("t", f"{stamps.home}/{name}" if name else stamps.home)
    if not stamps.safe or any("\t" in d or "\n" in d for d in disks):
        forget(stamps.home)
        return
    text = "\n".join(
        [
            MAGIC,
            after,
            until,
            knob_line(os.environ),
            "\t".join(sorted(set(disks))),
            json.dumps(roots),
            *stamps.lines,
        ]
    )
    path = f"{stamps.home}/{FILE}"
    tmp = f"{stamps.home}/.{FILE}.{os.getpid()}.tmp"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        forget(stamps.home)


def forget(home: str) -> None:
    """No wake file: the next minute is a full tick."""
    with contextlib.suppress(FileNotFoundError, OSError):
        os.unlink(f"{home}/{FILE}")
