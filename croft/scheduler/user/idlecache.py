"""The per-user tick's idle beat: a project whose idle memo holds gets its heartbeat without a process.

Starting an interpreter per project per minute, or even opening each project's runs.sqlite (WAL mode:
creating and removing its -wal and -shm files costs ~1 ms of CPU), would make an idle ``croft tick
--all`` over 100 projects cost several times what the target allows. So:

- the decision is the project tick's own: ``scheduler.tick.memo.memo_holds`` (the memo a full tick left, the
  setting, croft.json, the history and file fingerprints, the clock inside the memo's window);
- once it held, the per-user tick remembers the ``stat`` of everything that check read (runs.sqlite and
  its WAL, croft.json, the asset files and their local imports) with the memo's window, in
  ``<CROFT_HOME>/idle-cache.json``. While every stat is the same and the clock is inside the window, the
  check's inputs are the same, so its answer is too; any write to runs.sqlite or croft.json, and any
  asset file added, removed or renamed (a save by rename, a checkout) moves a stat the next minute looks
  at, and the check runs again; so does an asset file edited in place (the minute gate,
  ``scheduler.user.gate``, settles the minutes in which nothing moved). A stamp taken within ``RACY_NS``
  of a file's mtime is not trusted (a second write in the same clock tick could leave the mtime as it
  was);
- a project whose croft.json sets ``notify.ping`` is beaten here too: the URL is remembered with the
  stamp (croft.json is one of the stamped files), and ``croft tick --all`` sends the ping of every
  completed tick, idle or full, at the end of its minute;
- the heartbeat of such a minute goes to the user's one ``<CROFT_HOME>/idle-beats.json``
  (``heartbeat.write_user_beats``), not to runs.sqlite, so the stamps stay still;
  ``heartbeat.last_heartbeat`` reads the latest of it and the tick row;
- the project's incident file in croft's home is stamped too: a tick that failed since makes the idle
  check run again (and not hold), with no second look for it.

Imports only ``os`` (and the idle check when a stamp moved): it runs in every minute the gate hands on.
"""

from __future__ import annotations

import os
import time
from functools import cached_property
from typing import TYPE_CHECKING

from croft.scheduler.incidents import FOLDER, incident_path
from croft.scheduler.user.freshcache import STAMPED
from croft.scheduler.user.settingcache import HintFile
from croft.scheduler.user.trusted import PART_NAMES

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["KEPT", "IdleCache"]

RACY_NS = 50_000_000  # 50 ms: well above any filesystem clock tick


def _targets(root: str, deps: list[str]) -> tuple[list[str], list[str]]:
    """What the idle check reads besides ``FIXED``, relative to ``root``: (the asset folders: a file added,
    removed or renamed moves its folder's stat; the asset files and the local modules they import).
    Listed once when the check holds; each minute after only stats them."""
    from croft.scheduler.tick.filekeys import asset_tree  # lazy: only when the idle check ran

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
    except (OSError, TypeError):  # TypeError: a hint file written by hand
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


FIXED = STAMPED  # the history, its WAL and croft.json: read by every idle check, as by the freshness look
KEPT = frozenset({".croft", *STAMPED})  # the state folder for the disk look, and what freshness stamps
_WAL = ".croft/runs.sqlite-wal"
_RARELY = frozenset({"lib", _WAL})
_GONE = (-1,)  # a path that is not there


class IdleCache(HintFile):
    """``<CROFT_HOME>/idle-cache.json``: per project root, ``[stamp, files stamp, safe, at, until, folders,
    files, ping]`` of its last idle check that held (a list, not an object: a thousand of them are read
    every minute). The state folder is always ``<root>/.croft``: the idle check never holds for a
    relocated one."""

    def __init__(self, path: str | os.PathLike[str]):
        super().__init__(path)
        self._before: dict[str, tuple[int, int | None, bool] | None] = {}
        self._home = os.path.dirname(self.path) or "."  # the cache lives in croft's home, by the incidents
        self.stats: dict[str, os.stat_result | None] = {}  # the ``KEPT`` stats the last ``still`` took
        self.disks: dict[int, os.statvfs_result] = {}  # the minute's free space, by device

    @cached_property
    def _incidents(self) -> set[str] | None:
        """The incident files in croft's home, listed once a minute (None: the folder cannot be listed,
        so each project's is stat'ed)."""
        try:
            return set(os.listdir(f"{self._home}/{FOLDER}"))
        except FileNotFoundError:
            return set()
        except OSError:
            return None

    def _entry(self, root: str) -> list[object] | None:
        entry = self.entries.get(root)
        if (
            isinstance(entry, list)
            and len(entry) == 8
            and isinstance(entry[5], list)
            and isinstance(entry[6], list)
        ):
            return entry
        return None  # none, or one an earlier croft wrote: the idle check runs and writes it anew

    def still(self, root: str, now_iso: str) -> bool:
        """Whether nothing the idle check read moved since it last held (the asset files included),
        and the clock is inside its window: then its answer is the same, and the project only
        needs its heartbeat."""
        self.seen.add(root)
        entry = self._entry(root)
        if entry is None:
            return False
        stamp, files_stamp, safe, at, until, folders, files, _ = entry
        self.stats = {}
        incident = incident_path(root, self._home)
        before = self._before[root] = _stamp(root, folders, files, incident, self._incidents, self.stats)  # type: ignore[arg-type]
        return bool(
            safe
            and before is not None
            and before[0] == stamp
            and (files is None or before[1] == files_stamp)
            and at <= now_iso < until  # type: ignore[operator]
        )

    def check(self, root: str, now_iso: str) -> bool:
        """The idle check itself (``scheduler.tick.memo.memo_holds``, read-only); when it holds, remember what
        it read. For a project whose scheduling is on and ticks through the OS job."""
        from croft.scheduler.tick.memo import memo_holds

        self.seen.add(root)
        self.changed = True
        incident = incident_path(root, self._home)
        known = self._entry(root)
        before = self._before.pop(root, None)
        if known is None:
            targets = _targets(root, [])
            before = _stamp(root, *targets, incident)
        else:
            targets = (known[5], known[6])  # type: ignore[assignment]
            if before is None or before[1] is None:  # not stamped whole this minute (not the files' turn)
                before = _stamp(root, *targets, incident)
        memo = memo_holds(root, now_iso)
        if memo is None:
            self.entries.pop(root, None)
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
        self.entries[root] = [
            after[0] if after else None,
            after[1] if after else None,
            steady and before is not None and before[2],
            memo["at"],
            memo["until"],
            folders,
            files,
            memo.get("pingUrl"),
        ]
        return True

    def ping(self, root: str) -> str | None:
        """The ping URL of a project whose idle check held (read from its croft.json when it did)."""
        entry = self._entry(root)
        url = entry[7] if entry is not None else None
        return url if isinstance(url, str) else None
