"""The per-user cap on scheduled runs, and the pools: at most N alive at once, taken fairly, in fire order.

A slot is a lock file a live ``croft run --due`` process holds until it exits (``scheduler.tick.slotlocks``):
the count of slots held is the count of live scheduled runs, whatever crashed. Beside the lock files, one
small SQLite file, ``<CROFT_HOME>/slots.sqlite``, is shared by every project tick of the user:

- ``slots``: who holds each slot file (project, group, pools, process identity), for ``croft schedule
  status`` and the page to show; the lock, never this record, decides whether a slot is free.
- ``waiting``: the groups project ticks found due but could not start, with the fire they handle, the
  pools they need (with each pool's size) and why they wait. A tick only starts a group the one
  admission rule (``scheduler.admit``: oldest fire first, ties by project folder, then group; a
  group whose pool is full waits without blocking the groups behind it) lets start over every group
  waiting, so no project starves. An entry a project tick has not refreshed for ``STALE_AFTER`` is
  forgotten (the project went off, or its group was started or held).
- ``meta``: the staggered wake-up: the last wake (when, until when it lasts, how many groups it has
  started), so the minute after a long sleep starts at most N groups whatever finishes meanwhile.
- ``kicks``: the projects asked to tick now because a slot is theirs (see below), and when.

The cap limits runs alive, not starts per minute. A scheduled run that ends hands its slots on at once
(``hand_over``): it names the projects whose groups are now first in the order, and ticks them itself
(``scheduler.tick.afterrun``) with its own slots as the spare ones; the run such a tick starts waits for
the ending run to exit before it begins, so the ending run counts until it exits. A tick that finds
another project's group ahead of its own with a slot free asks that project too (``kicks``), and a tick
that no longer wants anything withdraws its waiting groups (``withdraw``) and passes its turn on, so a
backlog drains at the speed its runs take, never with more than N alive. A project is asked once until
its tick has come (or ``KICK_LASTS`` went by: a tick that found its project busy does not block it).

Everything is decided inside ONE ``BEGIN IMMEDIATE`` transaction, so two project ticks starting in the
same instant can never both take the last slot. Runs by hand never come here.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from croft.core import clock, disk, knobs, sqlitefile
from croft.core.clock import parse_instant, to_iso
from croft.core.duration import words
from croft.core.identity import ProcessIdentity, is_alive
from croft.core.paths import croft_home
from croft.core.private import create_file, make_dirs
from croft.core.problems import CroftError, problem
from croft.core.text import clip
from croft.scheduler.admit import Waiting, admit
from croft.scheduler.tick import slotlocks
from croft.scheduler.tick.slotlocks import Lock
from croft.scheduler.ticklog import TickLog

__all__ = [
    "DEFAULT_MAX",
    "ENV_NAME",
    "STALE_AFTER",
    "WAKE_GAP",
    "Grant",
    "Want",
    "attach",
    "hand_over",
    "home",
    "max_scheduled_runs",
    "queue_json",
    "queue_view",
    "release",
    "take",
    "withdraw",
]

DEFAULT_MAX = 2
ENV_NAME = "CROFT_MAX_SCHEDULED_RUNS"
CONFIG_KEY = "maxScheduledRuns"
STALE_AFTER = timedelta(minutes=3)
WAKE_GAP = timedelta(minutes=5)
WAKE_LASTS = timedelta(seconds=60)
KICK_LASTS = timedelta(seconds=30)

_VERSION = 2  # 2: slots are lock files (the table says who holds them); groups wait with their pools
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS slots (file TEXT PRIMARY KEY, root TEXT NOT NULL, grp TEXT NOT NULL,"
    " pools TEXT NOT NULL, pid INTEGER NOT NULL, proc_start TEXT, boot_id TEXT, taken_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS waiting (root TEXT NOT NULL, grp TEXT NOT NULL, fire TEXT NOT NULL,"
    " pools TEXT NOT NULL, why TEXT NOT NULL, seen_at TEXT NOT NULL, PRIMARY KEY (root, grp))",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS kicks (root TEXT PRIMARY KEY, at TEXT NOT NULL)",
)


def home() -> Path:

    return croft_home()


def max_scheduled_runs(home: Path, environ: dict[str, str] | None = None) -> tuple[int, str | None]:
    """(N, why the configured value was not used or None): ``CROFT_MAX_SCHEDULED_RUNS`` (a knob: a bad
    value is KNOB_INVALID, ``core.knobs``), else ``maxScheduledRuns`` in ``<CROFT_HOME>/config.json``,
    else 2. A bad value in the file falls back to 2 and says why (``croft schedule status`` shows it); the
    tick never stops over the file."""
    from_env = knobs.value(ENV_NAME, environ)
    if from_env is not None:
        return int(from_env), None
    path = home / "config.json"
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except FileNotFoundError:
        return DEFAULT_MAX, None
    except (OSError, ValueError, RecursionError) as exc:
        return DEFAULT_MAX, f"{path} cannot be read as JSON ({type(exc).__name__}); using {DEFAULT_MAX}"
    if not isinstance(config, dict) or CONFIG_KEY not in config:
        return DEFAULT_MAX, None
    value = _count(config[CONFIG_KEY])
    if value is None:
        knob = knobs.KNOBS[ENV_NAME]
        shown = clip(repr(config[CONFIG_KEY]))
        why = f'"{CONFIG_KEY}" in {path} is {shown}, not a whole number from {knob.low:g} to {knob.high:g}'
        return DEFAULT_MAX, f"{why}; using {DEFAULT_MAX}"
    return value, None


def _count(value: Any) -> int | None:
    """The file's cap by the knob's own range (one rule for both ways of setting it)."""
    knob = knobs.KNOBS[ENV_NAME]
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        if not value.isdigit() or len(value) > 6:
            return None
        value = int(value)
    return value if isinstance(value, int) and knob.low <= value <= knob.high else None


@dataclass(slots=True)
class Want:
    """A due group a project tick would start: its key (assets joined), the fire it handles and the
    pools its assets name, each with its size in this project's croft.json."""

    group: list[str]
    fire: str
    pools: dict[str, int] = field(default_factory=dict)
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.group = list(self.group)
        self.pools = dict(self.pools or {})
        self.key = ",".join(self.group)


@dataclass
class Grant:
    """What ``take`` decided: the groups to start now (each with the slots it holds) and the rest,
    waiting, each with why (``"cap"`` or ``"pool <name>"``, ``admit``'s words)."""

    start: list[tuple[Want, list[Lock]]] = field(default_factory=list)
    waiting: list[Want] = field(default_factory=list)
    why: dict[str, str] = field(default_factory=dict)  # group key -> why it waits
    sizes: dict[str, int] = field(default_factory=dict)
    cap: int = DEFAULT_MAX
    alive: int = 0
    queued: int = 0  # waiting groups of the whole user, after this tick
    room: int = 0
    wake_line: str | None = None
    kick: list[str] = field(default_factory=list)  # other projects whose groups are first, asked to tick now

    def reason(self, want: Want | None = None) -> str:
        why = self.why.get(want.key, "cap") if want is not None else "cap"
        if why.startswith("pool "):
            pool = why[len("pool ") :]
            size = self.sizes.get(pool, 0)
            return f"waiting for pool {pool} (at most {size} of its runs at once for this user)"
        cap = f"at most {self.cap} at once for this user"
        if self.alive >= self.cap or self.room == 0:
            runs = "scheduled run" if self.alive == 1 else "scheduled runs"
            more = "" if self.alive >= self.cap else "; waking up, the rest start over the next minutes"
            return f"waiting: {self.alive} {runs} already running ({cap}{more})"
        return f"waiting: groups with older fires go first ({cap})"


def _open(home: Path) -> sqlite3.Connection:
    """The slots file, ready; a broken one is moved aside and started again (``_rebuild``); a home that
    cannot take it (a full or read-only disk, no permission) is that problem, naming the file."""
    path = home / FILE
    try:
        make_dirs(home)
        return _connect(path)
    except OSError as exc:
        raise CroftError(
            disk.os_problem(exc, "opening the scheduler's slots", str(path)) or _bug(exc, path)
        ) from exc
    except sqlite3.Error as exc:
        if not _rebuildable(exc, path):
            raise CroftError(_problem(exc, path)) from exc
        return _rebuild(home, path, exc)


FILE = "slots.sqlite"


class _Damaged(sqlite3.DatabaseError):
    """The file opened, but SQLite's own check of its pages (``quick_check``: the file is a few pages) failed."""


def _connect(path: Path) -> sqlite3.Connection:
    create_file(path)  # 0600 whatever the umask (see core.private)
    conn = sqlitefile.connect(path, "create", timeout=10.0)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < _VERSION:  # new, or of an older croft
            _make(conn)
        for statement in _SCHEMA:
            conn.execute(statement)
        checked = conn.execute("PRAGMA quick_check").fetchone()
        if not checked or checked[0] != "ok":
            raise _Damaged(f"quick_check: {checked[0] if checked else 'no answer'}")
    except BaseException:
        conn.close()
        raise
    return conn


def _make(conn: sqlite3.Connection) -> None:
    """The tables, made in one write transaction that reads the version again inside it: of several
    ticks opening a new file at once, one makes them and the others find them made (read outside it, a
    late one would drop the tables a first one is already using). A file of version 1 said nothing of
    pools or lock files: its rows go, and the ticks fill the tables again."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < _VERSION:
            conn.execute("DROP TABLE IF EXISTS slots")
            conn.execute("DROP TABLE IF EXISTS waiting")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _translated(work: Any) -> Any:
    """Any SQLite error of the slots file becomes its problem, naming the file (never a bare traceback)."""

    @functools.wraps(work)
    def run(home: Path, *args: Any, **kwargs: Any) -> Any:
        try:
            return work(home, *args, **kwargs)
        except sqlite3.Error as exc:
            raise CroftError(_problem(exc, Path(home) / FILE)) from exc

    return run


def _rebuildable(exc: sqlite3.Error, path: Path) -> bool:
    """Whether the file itself is what is broken (not a database, corrupt, unreadable or read-only as a
    file) while its folder can take a new one: then it is state croft can rebuild."""
    code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    broken = (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY)
    if code not in broken and not isinstance(exc, _Damaged):
        return False
    return os.path.lexists(path) and disk.folder_problem(path.parent) is None


def _rebuild(home: Path, path: Path, why: sqlite3.Error) -> sqlite3.Connection:
    """Slots are state croft can rebuild: move the broken file aside (``slots.sqlite.broken``), say so in
    the tick log once (the tick that moved it), and start a new one. Under a lock, so two ticks finding it
    broken together move it once; the runs going now hold no slot in the new file until they end, so for
    that while the cap may be passed."""

    aside = path.with_name(FILE + ".broken")
    fd = os.open(home / (FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            return _connect(path)  # another tick rebuilt it meanwhile
        except sqlite3.Error as again:
            if not _rebuildable(again, path):
                raise CroftError(_problem(again, path)) from again
        try:
            os.replace(path, aside)
            for suffix in ("-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            conn = _connect(path)
        except OSError as exc:
            raise CroftError(
                disk.os_problem(exc, "rebuilding the scheduler's slots", str(path)) or _bug(exc, path)
            ) from exc
        except sqlite3.Error as exc:
            raise CroftError(_problem(exc, path)) from exc
        TickLog.of(home).write(
            to_iso(clock.now()),
            f"{path} could not be used ({why}); moved it to {aside.name} and started a new one (scheduled runs"
            " going now hold no slot in it until they end)",
        )
        return conn
    finally:
        os.close(fd)


def _problem(exc: sqlite3.Error, path: Path) -> Any:
    """The problem of a slots file croft cannot use or rebuild, naming it: the machine's (a full or
    read-only disk, no permission) when that is why, even when the file itself is broken too (it could
    not be moved aside), else a bug's."""
    machine = sqlitefile.machine_problem(exc, "opening the scheduler's slots", path)
    if machine is None:
        machine = disk.folder_problem(path.parent, f"moving the broken {path} ({exc}) aside")
    return machine or _bug(exc, path)


def _bug(exc: BaseException, path: Path) -> Any:

    return problem(
        "INTERNAL_ERROR",
        f"the scheduler's slots file {path} failed with {type(exc).__name__}: {exc}",
        f"Move {path} aside (croft starts a new one) and report this if it comes back.",
        details={"file": str(path)},
    )


@contextlib.contextmanager
def _writing(conn: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: committed when the body ends, rolled back when it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _forget_dead(conn: sqlite3.Connection) -> None:
    """Drop the records of slot holders that are gone (their locks went with them)."""
    rows = conn.execute("SELECT file, pid, proc_start, boot_id FROM slots").fetchall()
    dead = [(f,) for f, pid, start, boot in rows if not is_alive(ProcessIdentity(pid, start, boot))]
    conn.executemany("DELETE FROM slots WHERE file = ?", dead)


def _meta(conn: sqlite3.Connection, key: str) -> Any:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return json.loads(row[0]) if row else None


def _put_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, json.dumps(value)),
    )


@_translated
def take(
    home: Path,
    root: str,
    wants: Sequence[Want],
    now: datetime,
    who: ProcessIdentity,
    *,
    asleep: timedelta | None = None,
    cap: int | None = None,
    spare: list[Lock] | None = None,
) -> Grant:
    """Decide, in one transaction, which of ``wants`` start now; take their slots (the cap's and their
    pools') and record them under ``who``.

    ``asleep``: how long since this project's previous tick when that was more than ``WAKE_GAP`` (a wake).
    ``spare``: slots this process holds and hands on (a scheduled run that ends): counted as free, and
    given out first. Other projects whose waiting groups are ahead of these with a slot free are asked to
    tick (``Grant.kick``).
    """
    grant = Grant()
    grant.cap = cap if cap is not None else max_scheduled_runs(home)[0]
    spare = spare if spare is not None else []
    stamp = to_iso(now)
    conn = _open(home)
    try:
        with _writing(conn):
            _forget_dead(conn)
            grant.alive = slotlocks.count_held(home, slotlocks.CAP, tuple(spare))
            conn.execute(
                "DELETE FROM waiting WHERE root = ? OR seen_at < ?", (root, to_iso(now - STALE_AFTER))
            )
            conn.execute("DELETE FROM kicks WHERE root = ?", (root,))  # this project's tick has come
            others, sizes = _queue(conn, stamp)
            room, wake, in_wake = _room(conn, grant.cap, grant.alive, stamp)
            if asleep is not None and not in_wake:
                wake = {"at": stamp, "until": to_iso(now + WAKE_LASTS), "started": 0}
                in_wake = True
                due = len(wants) + len(others)
                groups = "group" if due == 1 else "groups"
                grant.wake_line = f"woke after {words(asleep.total_seconds())}; {due} {groups} due"
            grant.room = room
            for want in wants:
                for pool, size in want.pools.items():
                    sizes[pool] = min(size, sizes.get(pool, size))
            grant.sizes = sizes
            mine = {(w.fire, root, w.key): w for w in wants}
            queue = [*others, *(Waiting(f, r, k, tuple(sorted(w.pools))) for (f, r, k), w in mine.items())]
            decided = admit(queue, room, _pool_free(home, sizes, spare))
            waits = dict(decided.waits)
            for group in decided.start:
                starting = mine.get((group.fire, group.root, group.group))
                if starting is None:
                    continue
                locks = _grab(home, starting, spare)
                if locks is None:
                    waits[group] = "cap"  # admitted, yet no file was free: it waits like the rest
                    continue
                _hold(conn, root, starting, locks, who, stamp)
                grant.start.append((starting, locks))
            for group, why in waits.items():
                left = mine.get((group.fire, group.root, group.group))
                if left is None:
                    continue
                grant.waiting.append(left)
                grant.why[left.key] = why
                conn.execute(
                    "INSERT OR REPLACE INTO waiting (root, grp, fire, pools, why, seen_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (root, left.key, left.fire, json.dumps(left.pools), why, stamp),
                )
            grant.waiting.sort(key=lambda w: (w.fire, w.key))
            if in_wake:
                wake["started"] = int(wake.get("started", 0)) + len(grant.start)
                _put_meta(conn, "wake", wake)
            heads = [(g.root, g.group) for g in decided.start if g.root != root]
            grant.kick = _kick(conn, heads, now)
            grant.queued = len(others) + len(grant.waiting)
    finally:
        conn.close()
    return grant


def _grab(home: Path, want: Want, spare: list[Lock]) -> list[Lock] | None:
    """The cap's slot and a slot of each of the group's pools, or None (every one let go) when one is
    not free after all."""
    locks: list[Lock] = []
    for resource in [slotlocks.CAP, *(slotlocks.pool_resource(p) for p in sorted(want.pools))]:
        lock = slotlocks.grab(home, resource, spare)
        if lock is None:
            slotlocks.let_go(locks)
            return None
        locks.append(lock)
    return locks


def _hold(
    conn: sqlite3.Connection, root: str, want: Want, locks: list[Lock], who: ProcessIdentity, stamp: str
) -> None:
    pools = ",".join(sorted(want.pools))
    conn.executemany(
        "INSERT OR REPLACE INTO slots (file, root, grp, pools, pid, proc_start, boot_id, taken_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(lock.name, root, want.key, pools, who.pid, who.start, who.boot, stamp) for lock in locks],
    )


def _pool_free(home: Path, sizes: dict[str, int], spare: Sequence[Lock]) -> dict[str, int]:
    return {
        pool: size - slotlocks.count_held(home, slotlocks.pool_resource(pool), tuple(spare))
        for pool, size in sizes.items()
    }


def _queue(conn: sqlite3.Connection, stamp: str | None = None) -> tuple[list[Waiting], dict[str, int]]:
    """The waiting groups of the user (seen up to ``stamp``, when given: a tick decides only over what
    was queued by its own instant; a slot handed on goes to whatever waits), and each pool's size (the
    smallest any project gave it)."""
    rows = conn.execute(
        "SELECT root, grp, fire, pools FROM waiting WHERE seen_at <= ?", (stamp or "\uffff",)
    ).fetchall()
    sizes: dict[str, int] = {}
    out: list[Waiting] = []
    for root, grp, fire, text in rows:
        pools = _pools(text)
        for pool, size in pools.items():
            sizes[pool] = min(size, sizes.get(pool, size))
        out.append(Waiting(fire, root, grp, tuple(sorted(pools))))
    return out, sizes


def _pools(text: str) -> dict[str, int]:
    try:
        pools = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(pools, dict):
        return {}
    return {str(k): v for k, v in pools.items() if isinstance(v, int) and not isinstance(v, bool)}


def _room(conn: sqlite3.Connection, cap: int, alive: int, stamp: str) -> tuple[int, dict[str, Any], bool]:
    """(free slots, the wake record, whether ``stamp`` is inside its window): the one rule of how many
    groups may start now, for ``take`` and ``hand_over`` alike. Inside a wake window at most ``cap``
    groups start in all, whatever ends meanwhile."""
    room = max(0, cap - alive)
    wake = _meta(conn, "wake") or {}
    in_wake = bool(wake) and wake.get("at", "") <= stamp < wake.get("until", "")
    if in_wake:
        room = min(room, max(0, cap - int(wake.get("started", 0))))
    return room, wake, in_wake


def _kick(conn: sqlite3.Connection, heads: Sequence[tuple[str, str]], now: datetime) -> list[str]:
    """Record a kick for each project among ``heads`` (the groups first in the order) not asked in the
    last ``KICK_LASTS``; returns the projects to tick now. A kicked group leaves the queue: the slot it
    was admitted to is its tick's to take, so the next decision (another run ending in the same instant)
    gives the next free slot to the group behind it, not to it again. Its tick puts it back if it does
    not start."""
    if not heads:
        return []
    recent = to_iso(now - KICK_LASTS)
    conn.execute("DELETE FROM kicks WHERE at < ?", (recent,))
    asked = {r for (r,) in conn.execute("SELECT root FROM kicks")}
    out: list[str] = []
    for root, _ in heads:
        if root not in asked and root not in out:
            out.append(root)
    conn.executemany("INSERT OR REPLACE INTO kicks (root, at) VALUES (?, ?)", [(r, to_iso(now)) for r in out])
    conn.executemany("DELETE FROM waiting WHERE root = ? AND grp = ?", [h for h in heads if h[0] in out])
    return out


@_translated
def hand_over(home: Path, spare: Sequence[Lock], now: datetime, cap: int | None = None) -> list[str]:
    """A scheduled run that ends names the projects to tick now with its slots (``spare``) as free ones:
    the groups the admission rule starts first, as many as slots are free. Nothing for a process that
    holds no slot (a run by hand)."""
    path = home / FILE
    if not spare or not path.is_file():
        return []
    limit = cap if cap is not None else max_scheduled_runs(home)[0]
    conn = _open(home)
    try:
        with _writing(conn):
            conn.execute("DELETE FROM waiting WHERE seen_at < ?", (to_iso(now - STALE_AFTER),))
            kicks = _kick_heads(home, conn, limit, now, tuple(spare))
    finally:
        conn.close()
    return kicks


def _kick_heads(
    home: Path, conn: sqlite3.Connection, limit: int, now: datetime, spare: tuple[Lock, ...] = ()
) -> list[str]:
    """Inside the caller's transaction: ask the projects at the head of the waiting order to tick, as
    many as the admission rule lets start now (a slot given back, or a project's groups gone from the
    queue)."""
    room, _, _ = _room(conn, limit, slotlocks.count_held(home, slotlocks.CAP, spare), to_iso(now))
    queue, sizes = _queue(conn)
    decided = admit(queue, room, _pool_free(home, sizes, spare))
    return _kick(conn, [(g.root, g.group) for g in decided.start], now)


@_translated
def withdraw(home: Path, root: str, now: datetime, cap: int | None = None) -> list[str]:
    """A project tick that wants nothing now (its groups started elsewhere, or are held): its waiting
    groups leave the queue at once rather than in ``STALE_AFTER``, and if that frees the head of the
    order for another project, that project is asked to tick. Reads first, so the usual tick of a
    project with nothing queued takes no write lock."""
    path = home / FILE
    if not path.is_file():
        return []
    conn = _open(home)
    try:
        queued = conn.execute(
            "SELECT EXISTS(SELECT 1 FROM waiting WHERE root = ?1) OR EXISTS(SELECT 1 FROM kicks WHERE root = ?1)",
            (root,),
        ).fetchone()[0]
        if not queued:
            return []
        limit = cap if cap is not None else max_scheduled_runs(home)[0]
        with _writing(conn):
            conn.execute(
                "DELETE FROM waiting WHERE root = ? OR seen_at < ?", (root, to_iso(now - STALE_AFTER))
            )
            conn.execute("DELETE FROM kicks WHERE root = ?", (root,))
            kicks = _kick_heads(home, conn, limit, now)
    finally:
        conn.close()
    return kicks


@_translated
def attach(home: Path, locks: Sequence[Lock], child: ProcessIdentity) -> None:
    """Record that the run spawned with ``locks`` holds them now (the locks themselves went with it)."""
    conn = _open(home)
    try:
        conn.executemany(
            "UPDATE slots SET pid = ?, proc_start = ?, boot_id = ? WHERE file = ?",
            [(child.pid, child.start, child.boot, lock.name) for lock in locks],
        )
    finally:
        conn.close()


@_translated
def release(home: Path, locks: Sequence[Lock]) -> None:
    """Give back the slots of a run that could not be started."""
    slotlocks.let_go(locks)
    conn = _open(home)
    try:
        conn.executemany("DELETE FROM slots WHERE file = ?", [(lock.name,) for lock in locks])
    finally:
        conn.close()


def _holders(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """(slot file, root, group, pools) of every live holder's record."""
    rows = conn.execute("SELECT file, root, grp, pools, pid, proc_start, boot_id FROM slots").fetchall()
    return [(f, r, g, p) for f, r, g, p, pid, s, b in rows if is_alive(ProcessIdentity(pid, s, b))]


def queue_view(home: Path, now: datetime) -> dict[str, Any]:
    """The cap, the live scheduled runs, the pools' runs and the waiting groups of the whole user, each
    with what it waits for (read-only; status)."""
    cap, why = max_scheduled_runs(home)
    out: dict[str, Any] = {"cap": cap, "running": 0, "waiting": [], "pools": {}, "capProblem": why}
    path = home / "slots.sqlite"
    if not path.is_file():
        return out
    try:
        conn = sqlitefile.connect(path, "read", timeout=2.0)
        try:
            holders = _holders(conn)
            fresh = to_iso(now - STALE_AFTER)
            waiting = conn.execute(
                "SELECT root, grp, fire, pools, why FROM waiting WHERE seen_at >= ? ORDER BY fire, root, grp",
                (fresh,),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return out
    out["running"] = sum(1 for f, *_ in holders if slotlocks.resource_of(f) == slotlocks.CAP)
    pools: dict[str, dict[str, Any]] = {}
    for file, root, grp, _ in holders:
        resource = slotlocks.resource_of(file)
        if resource.startswith("pool."):
            held = pools.setdefault(resource[len("pool.") :], {"running": 0, "size": None, "held": []})
            held["running"] += 1
            held["held"].append({"root": root, "assets": grp.split(",")})
    for r, g, f, text, reason in waiting:
        for pool, size in _pools(text).items():
            entry = pools.setdefault(pool, {"running": 0, "size": None, "held": []})
            entry["size"] = size if entry["size"] is None else min(size, entry["size"])
        out["waiting"].append(
            {
                "root": r,
                "assets": g.split(","),
                "fire": f,
                "since": _since(f, now),
                "waitingFor": _waiting_for(reason),
            }
        )
    out["pools"] = pools
    return out


def _waiting_for(why: str) -> str:
    """What a waiting group waits for, in the words status and the page show."""
    return f"pool {why[len('pool ') :]}" if why.startswith("pool ") else "a slot"


def queue_json(home: Path, now: datetime) -> dict[str, Any]:
    """What ``croft schedule status`` says about the user's queue: the cap, the runs going, the waiting
    groups (oldest fire first) and one line of text."""
    out = queue_view(home, now)
    out["waitingCount"] = len(out["waiting"])
    going = f"{out['running']} of {out['cap']} scheduled runs going"
    out["text"] = f"{out['waitingCount']} waiting to start; {going}" if out["waiting"] else going
    for pool, held in sorted(out["pools"].items()):
        size = f" of {held['size']}" if held["size"] is not None else ""
        out["text"] += f"; pool {pool}: {held['running']}{size} going"
    return out


def _since(fire: str, now: datetime) -> str:
    try:
        return words(max(0.0, (now - parse_instant(fire)).total_seconds()))
    except ValueError:
        return ""
