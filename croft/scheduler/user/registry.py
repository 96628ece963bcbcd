"""The per-user registry ``<CROFT_HOME>/projects.json``: which projects tick, and how (os-job or serve).

Every change is a read-modify-write under an OS-level lock (``fcntl.flock`` on ``projects.json.lock``):
the kernel drops it when its holder dies, so a writer killed mid-change never blocks the next one.
Writes are a temp file, fsync, rename: a reader sees the old list or the new one, never half of one.
Reads take no lock for that reason.

The registry is the one file whose loss would silently stop everything (no project would tick, and
nothing would say so), so each change also writes its last good copy ``projects.json.bak``. A registry
found empty, garbled or gone while the copy reads is restored from it, with a note (the tick log, doctor);
the broken file is kept beside it as ``projects.json.broken``.

A project whose folder or croft.json is gone (a ``git checkout`` or ``stash`` takes croft.json away for a
minute) is kept and marked ``missingSince``, ticked again as soon as it is back, and dropped after 7 days
gone; one on a disk that is not mounted likewise, dropped after 30 days; one croft cannot even look at
(permissions) is kept. Only ``croft schedule off`` or that long absence takes a project off.
A registry croft cannot parse and cannot restore is an error with a fix, never silently replaced: it
may hold the only list of which projects should tick.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from json import loads
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.clock import from_iso, to_iso
from croft.core.duration import words
from croft.core.jsonfile import write_atomic
from croft.core.paths import home_text, path_text, project_state_dir, stat_of
from croft.core.private import make_dirs
from croft.core.problems import CroftError
from croft.core.text import clip

__all__ = [
    "GONE_DAYS",
    "MISSING_DAYS",
    "Entry",
    "Presence",
    "Registry",
    "presence",
    "project_state_dir",
    "removable_mount",
]

MISSING_DAYS = 30
GONE_DAYS = 7  # a folder or croft.json gone (a checkout, a stash, a move): kept this long, then dropped
BACKUP = "projects.json.bak"
LOCK_TIMEOUT_S = 12.0

if TYPE_CHECKING:
    from typing import Any, Literal

    Via = Literal["os-job", "serve"]
    Presence = Literal["present", "gone", "missing", "unknown"]
else:
    Via = Presence = str  # the names exist at run time for the modules that import them
_VIAS = ("os-job", "serve")


@dataclass(frozen=True, slots=True)
class Entry:
    """One registered project."""

    root: str
    added_at: str
    via: Via
    missing_since: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"root": self.root, "addedAt": self.added_at, "via": self.via}
        if self.missing_since:
            out["missingSince"] = self.missing_since
        return out

    @classmethod
    def from_json(cls, value: Any) -> Entry | None:
        """None for an entry of the wrong shape: one bad entry must not cost the others their ticks."""
        if not isinstance(value, dict):
            return None
        root, via, added = value.get("root"), value.get("via"), value.get("addedAt")
        if not isinstance(root, str) or not os.path.isabs(root) or via not in _VIAS:
            return None
        missing = value.get("missingSince")
        return cls(
            root, added if isinstance(added, str) else "", via, missing if isinstance(missing, str) else None
        )


def _quote(text: str) -> str:
    """A path shell-quoted for a fix or hint."""

    return shlex.quote(text)


def canonical(root: str | os.PathLike[str]) -> str:
    """The real path (symlinks resolved) when it exists; the absolute path otherwise (a deleted folder)."""

    path = Path(root).expanduser()
    try:
        return str(path.resolve(strict=True))
    except OSError:
        return os.path.abspath(path)


# Where removable disks are mounted: (prefix parts, how many parts after the prefix name the mount).
_MOUNT_ROOTS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("Volumes",), 1),
    (("mnt",), 1),
    (("media",), 1),
    (("media",), 2),
    (("run", "media"), 2),
)


def removable_mount(root: str) -> list[str]:
    """The folders that would be the mount point of a removable disk holding ``root`` (may be several)."""

    parts = Path(root).parts[1:]
    found = []
    for prefix, depth in _MOUNT_ROOTS:
        if tuple(parts[: len(prefix)]) == prefix and len(parts) > len(prefix) + depth - 1:
            found.append(str(Path("/", *parts[: len(prefix) + depth])))
    return found


def presence(root: str) -> tuple[Presence, str]:
    """Whether a registered project is there, and in words why not.

    ``gone`` only when croft can see the parent folder on a mounted disk and the project is not in it;
    a disk that is not mounted (or a parent that vanished with it) is ``missing``; a permission error
    is ``unknown``, which never prunes.
    """
    try:
        os.stat(os.path.join(root, "croft.json"))
        return "present", ""
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        return "unknown", f"cannot check the project: {exc.strerror or exc}"
    mounts = removable_mount(root)
    if mounts and not any(os.path.ismount(m) for m in mounts):
        return "missing", f"its disk {mounts[-1]} is not mounted"
    parent = os.path.dirname(root)
    try:
        os.stat(parent)
    except (FileNotFoundError, NotADirectoryError):
        return "missing", f"neither it nor {parent} exists"
    except OSError as exc:
        return "unknown", f"cannot check the project: {exc.strerror or exc}"
    return "gone", "its folder or croft.json is gone"


def _there(path: str) -> bool:
    """``Path.exists`` without pathlib (``core.paths.stat_of``)."""
    return stat_of(path) is not None


def _read(path: str) -> list[Entry] | None:
    """The entries in ``path``; None when there is no such file; ``_Broken`` when it holds no registry;
    CONFIG_INVALID when it cannot be read at all (permissions)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise _Broken("it is not UTF-8 text") from None
    except OSError as exc:
        raise CroftError(
            "CONFIG_INVALID",
            f"{path} cannot be read: {exc.strerror or exc}",
            f"Give your user read and write access to {path} (chmod 600).",
            details={"file": path},
        ) from None
    if not text.strip():
        raise _Broken("it is empty")  # croft always writes a list, "[]" at least
    try:
        raw = loads(text)
    except (ValueError, RecursionError) as exc:
        raise _Broken(f"invalid JSON ({clip(str(exc), 120)})") from None
    if not isinstance(raw, list):
        raise _Broken("it holds no list of projects")
    seen: set[str] = set()
    out = []
    for item in raw:
        entry = Entry.from_json(item)
        if entry is not None and entry.root not in seen:
            seen.add(entry.root)
            out.append(entry)
    return out


def _corrupt(path: str, why: str) -> CroftError:
    aside = path + ".broken"
    return CroftError(
        "CONFIG_INVALID",
        f"{path} is not a croft registry: {why}",
        f"Neither it nor its last good copy {BACKUP} can be read, so croft cannot restore it (it is the list"
        " of projects that tick). Move it aside, then run `croft schedule on` again in each project that"
        " should tick.",
        fix={
            "kind": "command",
            "description": "move the damaged registry aside; the next `croft schedule on` starts a new one",
            "command": f"mv {_quote(path)} {_quote(aside)}",
        },
        details={"file": path},
    )


def _as_path(text: str) -> Path:

    return Path(text)


class _Broken(Exception):
    """projects.json is there but holds no registry (empty, not UTF-8, not JSON, not a list)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Registry:
    """``projects.json`` in ``home`` (CROFT_HOME by default), and its last good copy ``projects.json.bak``.

    Its folder and files are kept as text, spelled as Paths would spell them; ``home``, ``path``,
    ``backup_path`` and ``lock_path`` are Paths made when asked for."""

    def __init__(self, home: str | os.PathLike[str] | None = None, lock_timeout: float = LOCK_TIMEOUT_S):
        self._home = home_text() if home is None else path_text(home)
        self._file = path_text(self._home, "projects.json")
        self._backup = path_text(self._home, BACKUP)
        self._lock = path_text(self._home, "projects.json.lock")
        self.lock_timeout = lock_timeout
        self.notes: list[str] = []  # what reading had to repair (a registry restored from its copy)
        self.dropped: list[str] = []  # the roots the last prune took off after their long absence
        self._held = False

    @property
    def home(self) -> Path:
        return _as_path(self._home)

    @property
    def path(self) -> Path:
        return _as_path(self._file)

    @property
    def backup_path(self) -> Path:
        return _as_path(self._backup)

    @property
    def lock_path(self) -> Path:
        return _as_path(self._lock)

    # -- reading ---------------------------------------------------------------------------------
    def entries(self) -> list[Entry]:
        """The registered projects in insertion order (no file and no copy = none). A registry that is
        empty, garbled or gone while its last good copy is readable is restored from the copy (the broken
        file kept as ``projects.json.broken``, a note in ``notes``); CONFIG_INVALID when neither reads."""
        try:
            found = _read(self._file)
        except _Broken as broken:
            return self._restore(broken.why)
        if found is None:
            if _there(self._backup):
                return self._restore("it is missing")
            return []
        return found

    def backup(self) -> list[Entry] | None:
        """The entries of the last good copy, or None when it is missing or unreadable."""
        try:
            return _read(self._backup)
        except (_Broken, CroftError):
            return None

    def refresh_backup(self) -> bool:
        """Make the copy match the registry again (after a write that could not update it); whether it
        had to be rewritten."""
        current = self.entries()
        if not _there(self._file) or (self.backup() == current and _there(self._backup)):
            return False  # no registry yet: nothing to keep a copy of
        write_atomic(self._backup, [e.to_json() for e in current], durable=True)
        return True

    def _restore(self, why: str) -> list[Entry]:
        good = self.backup()
        if good is None:
            raise _corrupt(self._file, why)
        with contextlib.nullcontext() if self._held else self.locked():
            try:  # another croft may have repaired it while this one waited for the lock
                again = _read(self._file)
                if again is not None:
                    return again
            except _Broken:
                pass
            if _there(self._file):
                os.replace(self._file, self._file + ".broken")
            write_atomic(self._file, [e.to_json() for e in good], durable=True)
        kept = " (the broken file is projects.json.broken)" if why != "it is missing" else ""
        self.notes.append(
            f"{self._file} could not be read ({why}); restored {len(good)} project(s) from its last good copy"
            f" {BACKUP}{kept}"
        )
        return good

    def find(self, root: str | os.PathLike[str]) -> Entry | None:
        key = canonical(root)
        return next((e for e in self.entries() if e.root in (key, str(root))), None)

    # -- changing --------------------------------------------------------------------------------
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the OS lock; DB_BUSY when another croft keeps it longer than ``lock_timeout``."""

        make_dirs(self._home)
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + self.lock_timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                    if time.monotonic() >= deadline:
                        raise CroftError(
                            "DB_BUSY",
                            f"another croft has been changing {self._file} for more than"
                            f" {words(self.lock_timeout)} (it holds {self._lock})",
                            f"Try again in a moment; `lsof {_quote(self._lock)}` shows"
                            " which process holds it.",
                            retryable=True,
                        ) from None
                    time.sleep(0.005 + (os.getpid() % 20) / 1000)
            self._held = True
            try:
                yield
            finally:
                self._held = False
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def update(self, change: Callable[[list[Entry]], list[Entry]]) -> list[Entry]:
        """Apply ``change`` to the list under the lock; writes only when the list changed."""
        with self.locked():
            before = self.entries()
            after = change(list(before))
            if after != before:
                self._write(after)
            return after

    def _write(self, entries: list[Entry]) -> None:
        """The registry, then its last good copy (each in one rename): a reader always finds one of them
        whole. A copy that cannot be written leaves the change made; doctor rewrites the copy."""
        value = [e.to_json() for e in entries]
        write_atomic(self._file, value, durable=True)
        with contextlib.suppress(OSError):
            write_atomic(self._backup, value, durable=True)

    def add(self, root: str | os.PathLike[str], via: Via, now: datetime) -> Entry:
        """Register (or switch how it ticks); keeps ``addedAt`` and clears a missing mark."""
        key = canonical(root)
        result: list[Entry] = []

        def change(entries: list[Entry]) -> list[Entry]:
            for i, e in enumerate(entries):
                if e.root == key:
                    entries[i] = replace(e, via=via, missing_since=None)
                    result.append(entries[i])
                    return entries
            result.append(Entry(root=key, added_at=to_iso(now), via=via))
            return [*entries, result[0]]

        self.update(change)
        return result[0]

    def restore(self, root: str | os.PathLike[str], previous: Entry | None) -> None:
        """Put back what ``root``'s entry was before a failed change (used by ``schedule on``'s rollback)."""
        key = canonical(root)

        def change(entries: list[Entry]) -> list[Entry]:
            kept = [e for e in entries if e.root != key]
            if previous is None:
                return kept
            at = next((i for i, e in enumerate(entries) if e.root == key), len(kept))
            return [*kept[:at], previous, *kept[at:]]

        self.update(change)

    def remove(self, root: str | os.PathLike[str]) -> Entry | None:
        """Unregister by real path or as given (works for a deleted folder); None when it was not there."""
        keys = {canonical(root), str(root)}
        removed: list[Entry] = []

        def change(entries: list[Entry]) -> list[Entry]:
            removed.extend(e for e in entries if e.root in keys)
            return [e for e in entries if e.root not in keys]

        if not _there(self._file) and not _there(self._backup):
            return None
        self.update(change)
        return removed[0] if removed else None

    def prune(
        self,
        now: datetime,
        *,
        lock_timeout: float | None = None,
        entries: list[Entry] | None = None,
        present: frozenset[str] = frozenset(),
    ) -> list[str]:
        """Drop gone projects and those missing for 30 days, mark newly missing ones; notes in words.

        Looks first without the lock, so a minute where nothing changed costs no lock and no write.
        ``entries``: the list just read (not read again); ``present``: roots the caller has just seen in
        place (their croft.json stat'ed this minute), which are not looked at again."""
        self.dropped = []
        plan = _prune_plan(self.entries() if entries is None else entries, now, present)
        if plan is None:
            return []
        if lock_timeout is not None:
            saved, self.lock_timeout = self.lock_timeout, lock_timeout
        notes: list[str] = []

        def change(entries: list[Entry]) -> list[Entry]:
            decided = _prune_plan(entries, now, present)
            if decided is None:
                return entries
            kept, said = decided
            notes.extend(said)
            self.dropped = [e.root for e in entries if e.root not in {k.root for k in kept}]
            return kept

        try:
            self.update(change)
        finally:
            if lock_timeout is not None:
                self.lock_timeout = saved
        return notes


def _prune_plan(
    entries: list[Entry], now: datetime, present: frozenset[str] = frozenset()
) -> tuple[list[Entry], list[str]] | None:
    """What pruning would do: (kept entries, notes), or None when nothing changes. Pure but for stat()."""
    kept: list[Entry] = []
    notes: list[str] = []
    for e in entries:
        state, why = ("present", "") if e.root in present else presence(e.root)
        if state in ("gone", "missing"):
            days = GONE_DAYS if state == "gone" else MISSING_DAYS
            if e.missing_since is None:
                kept.append(replace(e, missing_since=to_iso(now)))
                notes.append(
                    f"{e.root} is {state}: {why}; it stays on the schedule, ticks again once it is back, and"
                    f" is removed after {days} days {state}"
                )
                continue
            if now - from_iso(e.missing_since) >= timedelta(days=days):
                notes.append(
                    f"removed {e.root} from the schedule: {state} since {e.missing_since}"
                    f" ({days} days or more)"
                )
                continue
        elif state == "present" and e.missing_since is not None:
            kept.append(replace(e, missing_since=None))
            notes.append(f"{e.root} is back; it stays on the schedule")
            continue
        kept.append(e)
    return None if kept == entries else (kept, notes)
