"""The wake file the full per-user tick writes at the end of every minute, ``<CROFT_HOME>/wake``.

Its first line is a header: ``croft-wake 6 <n>``. The next ``n`` bytes are the minute gate's part
(``scheduler.user.gate``), and the gate reads only those; the rest is the per-project part the next full
minute reads (``scheduler.user.wakestate``). ``n`` is 0 (the gate hands the minute on) unless every project
of the registry was either only beaten (its idle check held, no run), off, or ticks from ``croft serve``,
nothing was logged and no problem was found; the beaten projects' pings are its last line, which the
gate hands its caller to send (``user.pingbeat``). The stamps are taken at the start of the
minute, before any project was looked at: a file that moves while the minute works is seen by the next
one. A stamp newer than ``RACY_NS`` is not trusted (a second write inside the same clock tick could leave
it as it was), and a path that cannot be written on one line (a newline in it) leaves the gate no part.
Both readers believe the file only when it is this user's and no one else may write it.

What the gate stamps is what can make a minute need work: croft.json, the history (a run by hand, an
approval, a pause), the registry and croft's home, and the folders a file can come into or leave
(assets/ and each folder under it, lib/), whose stats carry the trust facts too. Not the asset files
themselves, which are most of the paths, nor the project's folder and its state folder
(``UNSTAMPED_PARTS``): the gate settles a minute only while no project holds anything (a project with a
held asset leaves no idle memo), and then an edit to an asset's code can only hold that asset until a
person runs it (which writes the history), never bring a run sooner; ``croft run --due`` checks each
asset's code against the code a person ran before it starts it. So a file saved by rename (most editors,
``git checkout``) is seen the next minute through its folder, and one rewritten in place at the next
full minute: the next instant the gate's part names, at most ``RECHECK_S`` (an hour) ahead, when the
full minute compares every file's stat again and checks every folder's owner and mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from typing import Any, BinaryIO

from croft.scheduler.incidents import FOLDER, incident_path
from croft.scheduler.user.gate import FILE, MAGIC, knob_line, part_size, stamp
from croft.scheduler.user.trusted import HOME_FILES, PART_NAMES

__all__ = ["Stamps", "forget", "read_state", "settles", "write"]

RACY_NS = 50_000_000
SERVE_NOTE = "serve.json"  # servenote.NOTE (checked by a test: the minute's path loads no pathlib)
FIXED = (".croft/runs.sqlite",)
WALS = (".croft/runs.sqlite-wal",)
RARELY = frozenset({"lib"})  # usually absent: stamped only when there (one that comes holds only code)
# the project's folder and its state folder: what their owner and mode guard shows in the stamps of what
# is in them (whoever replaces croft.json, assets/ or the history moves their stamps), a lib/ that comes
# holds only code, and the state folder's mtime moves with every reader's -wal and -shm; the full minute
# checks both folders' owner and mode before anything runs
UNSTAMPED_PARTS = frozenset({"", ".croft"})
# croft's own minute files: rewritten by the minute itself, so only who owns them and their mode count
REWRITTEN = frozenset({"", "logs", "tick-all.lock", "idle-beats.json"})
UNSTAMPED = frozenset({FILE})  # the wake file itself: the gate looks at its owner and mode as it opens it


class Stamps:
    """The paths of the minute's start, and their stamp then: croft's home and, per project, croft.json,
    its asset folders, lib/, its history and WAL (``projects``: per root, the asset folders and files of
    its idle memo; the files are the full minute's to compare, not the gate's)."""

    def __init__(self, home: str, registry_path: str, projects: dict[str, tuple[list[str], list[str]]]):
        self.home = home
        self.projects = projects
        # serve.json: a croft serve coming or going changes which projects are the minute's (tick_all._ours)
        mine = [f"{home}/{name}" for name in HOME_FILES if name not in REWRITTEN | UNSTAMPED]
        home_paths = list(dict.fromkeys([registry_path, f"{home}/{FOLDER}", f"{home}/{SERVE_NOTE}", *mine]))
        self.full: list[str] = [p for p in home_paths if os.access(p, os.F_OK)]
        self.absent: list[str] = [p for p in home_paths if p not in self.full]
        self.wals: list[str] = [f"{home}/slots.sqlite-wal"]
        for root, (folders, _files) in projects.items():
            names = dict.fromkeys([*PART_NAMES, *FIXED, *folders])  # not its files: see the module's text
            for name in names:
                path = f"{root}/{name}" if name else root
                if name in UNSTAMPED_PARTS:
                    continue
                if name not in RARELY or os.access(path, os.F_OK):  # lib/ only when there (RARELY)
                    self.full.append(path)
            self.wals += [f"{root}/{name}" for name in WALS]
            incident = incident_path(root, home)
            if os.access(incident, os.F_OK):  # when absent, the incidents folder's stamp says it came
                self.full.append(incident)
        self.safe = not any("\n" in p for p in (*self.full, *self.absent, *self.wals))
        self.before = self._stamp([])

    def _stamp(self, trust: list[str]) -> int | None:
        """The stamp of the paths (``trust``: the trust-only ones, looked at for owner and mode); None
        when one could not be looked at or was written within ``RACY_NS`` (a second write in the same
        clock tick could leave it as it was)."""
        try:
            found, newest = stamp(self.full, trust, self.absent, self.wals)
        except FileNotFoundError:  # a project path gone (croft.json, say): stamped as absent from here on
            self.absent += [p for p in self.full if not os.access(p, os.F_OK)]
            self.full = [p for p in self.full if p not in self.absent]
            try:
                found, newest = stamp(self.full, trust, self.absent, self.wals)
            except OSError:
                return None
        except OSError:
            return None
        return None if newest > time.time_ns() - RACY_NS else found


def write(
    stamps: Stamps,
    state: dict[str, Any],
    gate: tuple[str, str, list[str], list[str], list[tuple[str, str]]] | None,
) -> None:
    """The wake file, written whole (temp and rename): its header, the gate's part when ``gate`` (after,
    until, the roots to beat, the folders whose disks must have room, the pings each settled minute owes:
    url and state folder) lets the minute gate settle the next minutes, and ``state``, the per-project
    part (``scheduler.user.wakestate``). On any failure there is none. croft's own files are stamped as
    the minute leaves them (who owns them, their mode); everything else must be as it was at the
    minute's start, or the gate's part is left out."""
    part = _gate_part(stamps, *gate) if gate is not None else ""
    head = f"{MAGIC} {len(part.encode())}\n"
    path = f"{stamps.home}/{FILE}"
    tmp = f"{stamps.home}/.{FILE}.{os.getpid()}.tmp"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(head + part + json.dumps(state) + "\n")
        os.replace(tmp, path)
    except (OSError, ValueError):  # ValueError: a path that is not text
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        forget(stamps.home)


def _gate_part(
    stamps: Stamps,
    after: str,
    until: str,
    roots: list[str],
    disks: Iterable[str],
    pings: list[tuple[str, str]],
) -> str:
    """What the minute gate reads (``gate.gate``), each line ended; empty when it must not settle. Its
    last line is the pings the settled minute owes (JSON: ``[[url, state folder], ...]``), which the gate
    hands its caller unread; a ping URL is its project's secret, and this file is this user's alone."""
    chosen = _one_per_disk(disks)
    # croft's own minute files that are there; one not yet there is not stamped: the gate makes the
    # heartbeat file in its first minute (temp and rename, in a home only its user can write), and a
    # stamp of its absence would hand the next minute on for nothing
    mine = [f"{stamps.home}/{name}" if name else stamps.home for name in sorted(REWRITTEN)]
    trust = [path for path in mine if os.access(path, os.F_OK)]
    final = stamps._stamp(trust)
    if (
        not stamps.safe
        or stamps.before is None
        or final is None
        or stamps._stamp([]) != stamps.before
        or chosen is None
        or any("\t" in d or "\n" in d for d in chosen)
    ):
        return ""
    lines = [
        after,
        until,
        knob_line(os.environ),
        "\t".join(chosen),
        json.dumps(roots),
        str(final),
        f"{len(stamps.full)} {len(trust)} {len(stamps.absent)} {len(stamps.wals)}",
        *stamps.full,
        *trust,
        *stamps.absent,
        *stamps.wals,
        json.dumps([list(p) for p in pings]),  # the last line: the pings (user.pingbeat)
    ]
    return "\n".join(lines) + "\n"


def _one_per_disk(folders: Iterable[str]) -> list[str] | None:
    """One folder of each file system among ``folders``: the gate asks each disk once for its room, not
    each project (a folder that moves to another disk moves its files' stamps, whose device is stamped).
    None when one cannot be looked at."""
    chosen: dict[int, str] = {}
    for folder in sorted(set(folders)):
        try:
            chosen.setdefault(os.stat(folder).st_dev, folder)
        except OSError:
            return None
    return sorted(chosen.values())


def _open(home: str) -> tuple[BinaryIO, int] | None:
    """The wake file open for reading (binary), past its header; with the gate part's length. None when
    there is none, it is not this user's alone, or its header is not this croft's."""
    try:
        handle = open(f"{home}/{FILE}", "rb")  # noqa: SIM115 - handed to the caller, which closes it
    except OSError:
        return None
    try:
        size = part_size(handle.fileno(), handle.readline(64))
        if size is not None:
            return handle, size
    except OSError:
        pass
    handle.close()
    return None


def read_state(home: str) -> dict[str, Any]:
    """The per-project part the last full minute wrote; empty when there is none or it cannot be
    believed (not this user's alone, not what croft wrote): every project is then looked at in full."""
    found = _open(home)
    if found is None:
        return {}
    handle, size = found
    try:
        with handle:
            handle.seek(size, os.SEEK_CUR)
            state = json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return {}
    return state if isinstance(state, dict) else {}


def settles(home: str) -> bool:
    """Whether the wake file lets the minute gate settle the next minute (its header gives the gate a
    part to read)."""
    found = _open(home)
    if found is None:
        return False
    found[0].close()
    return found[1] > 0


def forget(home: str) -> None:
    """No wake file: the next minute is a full tick, which looks at every project in full."""
    with contextlib.suppress(FileNotFoundError, OSError):
        os.unlink(f"{home}/{FILE}")
