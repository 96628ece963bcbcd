"""What the full per-user tick remembers of each project between minutes: the per-project part of the
wake file (``scheduler.user.wakefile``), one section per project root.

A thousand projects make a minute that looks at each in full (its idle check, freshness promises,
setting) cost several times what the target allows, and most minutes nothing of a project changed. So
each project's section holds, for the next full minute (the minute gate, ``scheduler.user.gate``, reads
only the file's header and never this part):

- ``idle``: the ``stat`` of everything the project tick's own idle check
  (``scheduler.tick.memo.memo_holds``) read when it last held (runs.sqlite and its WAL, croft.json, the
  asset folders and files and their local imports, the owner and mode of the parts the trust check
  reads, the project's incident file in croft's home), the memo's window and the ping URL. While every
  stat is the same and the clock is inside the window, the check's inputs are the same, so its answer
  is too: the project only needs its heartbeat (``heartbeat.write_user_beats``) and its ping. A stamp
  taken within ``RACY_NS`` of a file's mtime is not trusted (a second write in the same clock tick could
  leave the mtime as it was);
- ``fresh``: when its freshness promises next need a look (a promise breaks at a known instant unless
  its facts change, and every change that matters writes runs.sqlite or croft.json, stamped with it; an
  asset file edited in place is seen within ``RECHECK_S``);
- ``setting``: its scheduling setting, keyed by the stat of the history that holds it.

So when one project of a thousand changed, only that one is looked at in full. The part is a hint: the
wake file missing, unreadable or not this user's alone, every project is simply looked at in full, and
the minute writes it anew. A project not looked at in a minute (taken off, left to croft serve) loses its
section.

Imports little at the top (the idle check, the freshness look and the setting reader only when a stamp
moved): it runs in every minute the gate hands on.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING

from croft.core.clock import to_iso
from croft.history.peek import peek
from croft.scheduler.incidents import FOLDER, incident_path
from croft.scheduler.setting import Scheduling, read_scheduling_file
from croft.scheduler.tick.filekeys import asset_paths, asset_tree
from croft.scheduler.user.trusted import PART_NAMES
from croft.scheduler.user.wakefile import Stamps, read_state, write

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any

__all__ = ["FIXED", "KEPT", "RACY_NS", "RECHECK_S", "WakeState", "look"]

RACY_NS = 50_000_000  # 50 ms: well above any filesystem clock tick
RECHECK_S = 3600  # the longest a freshness promise goes unlooked-at while nothing moved
FIXED = (".croft/runs.sqlite", ".croft/runs.sqlite-wal", "croft.json")  # read by every idle and fresh look
KEPT = frozenset({".croft", *FIXED})  # the state folder for the disk look, and what freshness stamps
_WAL = ".croft/runs.sqlite-wal"
_RARELY = frozenset({"lib", _WAL})
_GONE = (-1,)  # a path that is not there


def _targets(root: str, deps: list[str]) -> tuple[list[str], list[str]]:
    """What the idle check reads besides ``FIXED``, relative to ``root``: (the asset folders: a file added,
    removed or renamed moves its folder's stat; the asset files and the local modules they import).
    Listed once when the check holds; each minute after only stats them."""
    folders, files = asset_tree(f"{root}/assets")
    skip = len(root) + 1
    return [path[skip:] for path in folders], [path[skip:] for path in files] + sorted(set(deps))


def _stamp(
    root: str,
    folders: list[str],
    files: list[str] | None,
    incident: str,
    listed: set[str] | None = None,
    keep: dict[str, os.stat_result | None] | None = None,
) -> tuple[int, int | None, bool] | None:
    """(one value for the stats of ``FIXED`` and ``folders``, of the parts the trust check reads and of the
    project's incident file in croft's home (a failed tick since: the idle check must run again, and it
    will not hold); one value for the stats of ``files``, None when not asked; whether both are safe to
    compare later); None: something could not be read. Each value is the hash of a tuple of integers,
    which Python computes the same in every process (unlike that of text), so it is stored as it is.
    Each path is stat'ed once: a part that is a target too is stamped whole. ``listed``: the names in the
    incidents folder this minute (one listing for every project, not a ``stat`` each); ``keep`` is given
    the ``stat`` (None: not there) of each of ``KEPT``, by its name relative to the root, for the minute's
    other looks at the project.

    It runs for every project every minute, so it is written for the interpreter's sake: flat lists of
    integers, each path stat'ed once, no object kept that nothing reads."""
    racy = time.time_ns() - RACY_NS
    keep = {} if keep is None else keep
    stats: list[int] = [len(folders)]
    prefix = root + "/"
    try:
        for name in PART_NAMES:  # what the trust check reads: its owner and mode (and that it is the same
            if name in FIXED or name in folders:  # file); never its mtime, which a file made or removed
                continue  # inside a folder moves
            st = _stat(prefix + name if name else root, name in _RARELY)
            if name in KEPT:
                keep[name] = st
            stats += _GONE if st is None else st[:6]  # mode, inode, device, links, owner, group
        safe = True
        if listed is not None and incident[incident.rfind("/") + 1 :] not in listed:
            stats += _GONE  # no incident: the same as a stat that found none
        elif (st := _stat(incident, False)) is None:
            stats += _GONE
        else:
            stats += st[:7]
            stats.append(st.st_mtime_ns)
            safe = st.st_mtime_ns <= racy
        safe = _add(stats, prefix, FIXED, racy, keep) and safe
        safe = _add(stats, prefix, folders, racy, keep) and safe
        if files is None:
            return hash(tuple(stats)), None, safe
        more: list[int] = [len(files)]
        safe = _add(more, prefix, files, racy, keep) and safe
    except (OSError, TypeError):  # TypeError: a section written by hand
        return None
    return hash(tuple(stats)), hash(tuple(more)), safe


def _add(
    stats: list[int], prefix: str, rels: Iterable[str], racy: int, keep: dict[str, os.stat_result | None]
) -> bool:
    """Append each path's stat (its size and mtime in nanoseconds included, not its atime) to ``stats``;
    False when one was written too recently to be trusted."""
    safe = True
    stat = os.stat
    for rel in rels:
        if rel == _WAL:
            st = _stat(prefix + rel, True)
            keep[rel] = st
            if st is None or not st.st_size:  # an empty WAL holds nothing (a reader's open leaves one)
                stats += _GONE
                continue
        else:
            try:
                st = stat(prefix + rel)
            except FileNotFoundError:
                st = None
            if rel in KEPT:
                keep[rel] = st
            if st is None:
                stats += _GONE
                continue
        mtime = st.st_mtime_ns
        stats += st[:7]
        stats.append(mtime)
        if mtime > racy:
            safe = False
    return safe


def _stat(path: str, rarely: bool) -> os.stat_result | None:
    """The path's ``stat``, None when it is not there. ``rarely``: a path that usually is not (lib/, the
    WAL of a history no one has open), asked with ``access`` first: half the cost of a ``stat`` that
    fails, which builds an exception."""
    if rarely and not os.access(path, os.F_OK):
        return None
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _fresh_stamp(root: str, state_dir: str, known: Any = None) -> int | None:
    """One integer for the mtimes and sizes of ``FIXED`` (an empty WAL the same as none); None when one
    cannot be stat'ed. ``known``: the stats the idle stamp took this minute, by name under the root, for
    a project whose state folder is ``<root>/.croft``."""
    if known is None:
        known = {}
        paths = (f"{state_dir}/runs.sqlite", f"{state_dir}/runs.sqlite-wal", f"{root}/croft.json")
        for name, path in zip(FIXED, paths, strict=True):
            try:
                known[name] = os.stat(path)
            except FileNotFoundError:
                known[name] = None
            except OSError:
                return None
    out: list[int] = []
    for name in FIXED:
        st = known[name]
        if st is None or (not st.st_size and name.endswith("-wal")):
            out += [0, 0]
        else:
            out += [st.st_mtime_ns, st.st_size]
    return hash(tuple(out))


def _setting_stamp(state_dir: str) -> list[int] | None:
    """The history's and its WAL's mtime, size and mode (a chmod that makes it unreadable is looked at,
    not answered from memory); None when one cannot be stat'ed."""
    out: list[int] = []
    for name in ("runs.sqlite", "runs.sqlite-wal"):
        try:
            st = os.stat(f"{state_dir}/{name}")
        except FileNotFoundError:
            out += [0, 0, 0]
            continue
        except OSError:
            return None
        out += [st.st_mtime_ns, st.st_size, st.st_mode] if st.st_size or name == "runs.sqlite" else [0, 0, 0]
    return out


class WakeState:
    """The per-project part of ``<CROFT_HOME>/wake``, read at the first look and written with the file
    every full minute (``save``). A section is ``{"idle": [stamp, files stamp, safe, at, until, folders,
    files, ping], "fresh": {"stamp", "next"}, "setting": {"dir", "stamp", "setting"}}`` (the idle answer a
    list, not an object: a thousand of them are read every full minute). The idle check never holds for a
    relocated state folder, so ``idle`` always means ``<root>/.croft``."""

    def __init__(self, home: str):
        self.home = home
        self._projects: dict[str, Any] | None = None
        self.seen: set[str] = set()
        self._before: dict[str, tuple[int, int | None, bool] | None] = {}
        self.stats: dict[str, os.stat_result | None] = {}  # the ``KEPT`` stats the last ``still`` took
        self.disks: dict[int, os.statvfs_result] = {}  # the minute's free space, by device

    @property
    def projects(self) -> dict[str, Any]:
        if self._projects is None:
            self._projects = read_state(self.home)
        return self._projects

    def _part(self, root: str, name: str) -> Any:
        section = self.projects.get(root)
        return section.get(name) if isinstance(section, dict) else None

    def _keep(self, root: str, name: str, value: Any) -> None:
        section = self.projects.get(root)
        if not isinstance(section, dict):
            section = self.projects[root] = {}
        if value is None:
            section.pop(name, None)
        else:
            section[name] = value

    def save(
        self, stamps: Stamps, gate: tuple[str, str, list[str], list[str], list[tuple[str, str]]] | None
    ) -> None:
        """The wake file with the sections of the projects looked at this minute, and the gate's header
        when ``gate`` (after, until, the roots to beat, their state folders, the pings each settled minute
        owes) lets it settle the next."""
        kept = {root: s for root, s in self.projects.items() if root in self.seen and isinstance(s, dict)}
        write(stamps, kept, gate)

    @cached_property
    def _incidents(self) -> set[str] | None:
        """The incident files in croft's home, listed once a minute (None: the folder cannot be listed,
        so each project's is stat'ed)."""
        try:
            return set(os.listdir(f"{self.home}/{FOLDER}"))
        except FileNotFoundError:
            return set()
        except OSError:
            return None

    # the idle answer

    def idle(self, root: str) -> list[Any] | None:
        """The project's idle section, None when there is none or it is not in the shape this croft writes."""
        entry = self._part(root, "idle")
        if (
            isinstance(entry, list)
            and len(entry) == 8
            and isinstance(entry[5], list)
            and isinstance(entry[6], list)
        ):
            return entry
        return None

    def still(self, root: str, now_iso: str) -> bool:
        """Whether nothing the idle check read moved since it last held (the asset files included), and
        the clock is inside its window: then its answer is the same, and the project only needs its
        heartbeat."""
        self.seen.add(root)
        entry = self.idle(root)
        if entry is None:
            return False
        stamp, files_stamp, safe, at, until, folders, files, _ = entry
        self.stats = {}
        incident = incident_path(root, self.home)
        before = self._before[root] = _stamp(root, folders, files, incident, self._incidents, self.stats)
        return bool(
            safe
            and before is not None
            and before[0] == stamp
            and (files is None or before[1] == files_stamp)
            and isinstance(at, str)
            and isinstance(until, str)
            and at <= now_iso < until
        )

    def check(self, root: str, now_iso: str) -> bool:
        """The idle check itself (``scheduler.tick.memo.memo_holds``, read-only); when it holds, remember
        what it read. For a project whose scheduling is on and ticks through the OS job."""
        from croft.scheduler.tick.memo import memo_holds  # the idle check's room: only a project that moved

        self.seen.add(root)
        incident = incident_path(root, self.home)
        known = self.idle(root)
        before = self._before.pop(root, None)
        if known is None:
            targets = _targets(root, [])
            before = _stamp(root, *targets, incident)
        else:
            targets = (known[5], known[6])
            if before is None or before[1] is None:  # not stamped whole this minute
                before = _stamp(root, *targets, incident)
        memo = memo_holds(root, now_iso)
        if memo is None:
            self._keep(root, "idle", None)
            return False
        folders, files = _targets(root, memo["deps"])
        after = _stamp(root, folders, files, incident)
        # Trusted next minute only when nothing moved while the check read (its own closing may have
        # checkpointed the WAL; then the next minute's check, which writes nothing, gives a steady
        # stamp), and the listing is the one stamped before it.
        steady = (
            before is not None
            and after is not None
            and targets == (folders, files)
            and before[:2] == after[:2]
        )
        self._keep(root, "idle", [
            after[0] if after else None,
            after[1] if after else None,
            steady and before is not None and before[2],
            memo["at"],
            memo["until"],
            folders,
            files,
            memo.get("pingUrl"),
        ])  # fmt: skip
        return True

    def ping(self, root: str) -> str | None:
        """The ping URL of a project whose idle check held (read from its croft.json when it did)."""
        entry = self.idle(root)
        url = entry[7] if entry is not None else None
        return url if isinstance(url, str) else None

    # freshness

    def fresh_next(self, root: str) -> str | None:
        """When the project's freshness promises next need a look, None when unknown."""
        entry = self._part(root, "fresh")
        ahead = entry.get("next") if isinstance(entry, dict) else None
        return ahead if isinstance(ahead, str) else None

    def fresh_due(self, root: str, state_dir: str, now_iso: str, known: Any = None) -> int | bool | None:
        """False while nothing moved and the next look is still ahead; else the stamp to remember after
        the look (None when the files cannot be stat'ed: look, and remember nothing)."""
        self.seen.add(root)
        stamp = _fresh_stamp(root, state_dir, known)
        entry = self._part(root, "fresh")
        if stamp is not None and isinstance(entry, dict) and entry.get("stamp") == stamp:
            ahead = entry.get("next")
            if isinstance(ahead, str) and now_iso < ahead:
                return False
        return stamp

    def fresh_remember(self, root: str, stamp: int | None, next_iso: str) -> None:
        self._keep(root, "fresh", None if stamp is None else {"stamp": stamp, "next": next_iso})

    # the scheduling setting

    def setting(self, root: str, state_dir: Path) -> Scheduling:
        """The project's setting (``read_scheduling_file``, the one reader), read again only when its
        history moved."""
        self.seen.add(root)
        folder = str(state_dir)
        stamp = _setting_stamp(folder)
        kept = self._part(root, "setting")
        if (
            stamp is not None
            and isinstance(kept, dict)
            and kept.get("dir") == folder
            and kept.get("stamp") == stamp
        ):
            return Scheduling.from_json(kept.get("setting"))
        found = read_scheduling_file(state_dir)
        if stamp is not None and _setting_stamp(folder) == stamp:  # nothing wrote while we read
            self._keep(root, "setting", {"dir": folder, "stamp": stamp, "setting": found.to_json()})
        return found


def look(
    state: WakeState,
    root: str,
    state_dir: str,
    now: Any,
    note: Any,
    now_iso: str | None = None,
    known: Any = None,
) -> None:
    """The freshness watch of one project (``scheduler.user.freshwatch``), only when its next look has
    come or what it reads moved; never raises (a failed look is one note, and is tried within the hour).
    ``known``: stats of its files taken this minute (the idle stamp's), not taken again."""
    stamp = state.fresh_due(root, state_dir, now_iso or to_iso(now), known)  # to_iso is not free
    if stamp is False:
        return

    if not _any_promise(root, state_dir):  # the usual project: nothing promised, nothing told; no facts read
        state.fresh_remember(root, stamp, to_iso(now + timedelta(seconds=RECHECK_S)))
        return
    from croft.scheduler.user.freshwatch import watch  # the freshness look's room: only for a promise

    try:
        after = watch(root, now, RECHECK_S)
    except Exception as exc:
        note(f"{root}: freshness not checked: {type(exc).__name__}: {exc}")
        after = to_iso(now + timedelta(seconds=RECHECK_S))
    moved = _fresh_stamp(root, state_dir)
    if stamp is not None and moved != stamp:
        # something wrote while we looked (or our own read touched the WAL): keep what the files are now,
        # and look once more next minute, so a write we raced is never missed for longer
        stamp = moved
        after = min(after, to_iso(now + timedelta(seconds=60)))
    state.fresh_remember(root, stamp, after)


def _any_promise(root: str, state_dir: str) -> bool:
    """Whether an asset file's text mentions a freshness promise (``fresh_within``, ``-- fresh within:``)
    or a breach was told and not yet ended (``notify.freshness``): files read as text, one read-only
    query, no asset parsed and no WAL created. Only a yes pays for the full look."""
    for path in asset_paths(f"{root}/assets"):
        try:
            with open(path, "rb") as handle:
                text = handle.read()
        except OSError:
            return True  # unreadable: the full look says what it can
        if b"fresh_within" in text or b"fresh within" in text:
            return True
    rows = peek(
        f"{state_dir}/runs.sqlite",
        "SELECT 1 FROM settings WHERE key = 'notify.freshness' AND value NOT IN ('{}', 'null')",
    )
    return bool(rows)
