"""The per-user cap on scheduled runs: at most N alive at once across every project, taken fairly.

One small SQLite file, ``<CROFT_HOME>/slots.sqlite``, is shared by every project tick of the user:

- ``slots``: one row per scheduled run holding a slot, with the process identity (pid + start time +
  boot id) of whoever holds it. A tick reserves a slot under its own identity, then hands it to the run
  it spawned; a row whose process is gone (a killed run, a tick that died between the two) is dead and
  is dropped by the next taker, so no crash can leave the count wrong.
- ``waiting``: the groups project ticks found due but could not start, with the fire they handle. A
  tick only starts a group when no fresher-looking, older group of another project is ahead of it in
  the one order (oldest fire first, ties by project folder, then group), so no project starves. An
  entry a project tick has not refreshed for ``STALE_AFTER`` is forgotten (the project went off, or its
  group was started or held).
- ``meta``: the staggered wake-up: the last wake (when, until when it lasts, how many groups it has
  started), so the minute after a long sleep starts at most N groups whatever finishes meanwhile.
- ``kicks``: the projects asked to tick now because a slot is theirs (see below), and when.

The cap limits runs alive, not starts per minute. A scheduled run that ends hands its slot over at
once (``hand_over``): it gives its slot back and asks the project ticks of the groups now first in the
order (``kicks``) to tick; the tick that comes takes the slot through ``take`` like any other, so every
hold rule, the fire recorded before the spawn and the order itself are the project tick's own. A tick
that finds another project's group ahead of its own with a slot free asks that project too, and a tick
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

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS slots (id TEXT PRIMARY KEY, root TEXT NOT NULL, pid INTEGER NOT NULL,"
    " proc_start TEXT, boot_id TEXT, taken_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS waiting (root TEXT NOT NULL, grp TEXT NOT NULL, fire TEXT NOT NULL,"
    " seen_at TEXT NOT NULL, PRIMARY KEY (root, grp))",
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
    """A due group a project tick would start: its key (assets joined) and the fire it handles."""

    group: list[str]
    fire: str
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = ",".join(self.group)


class Grant:
    """What ``take`` decided: the groups to start now (each with its slot id) and the rest, waiting."""

    def __init__(self) -> None:
        self.start: list[tuple[Want, str]] = []
        self.waiting: list[Want] = []
        self.cap = DEFAULT_MAX
        self.alive = 0
        self.queued = 0  # waiting groups of the whole user, after this tick
        self.room = 0
        self.wake_line: str | None = None
        self.kick: list[str] = []  # other projects whose groups are first in the order, asked to tick now

    def reason(self) -> str:
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
        for statement in _SCHEMA:
            conn.execute(statement)
        checked = conn.execute("PRAGMA quick_check").fetchone()
        if not checked or checked[0] != "ok":
            raise _Damaged(f"quick_check: {checked[0] if checked else 'no answer'}")
    except BaseException:
        conn.close()
        raise
    return conn


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


def _live(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Drop dead slots; (slot id, project root) of the live ones."""
    live: list[tuple[str, str]] = []
    dead: list[tuple[str, str]] = []
    for sid, root, pid, start, boot in conn.execute("SELECT id, root, pid, proc_start, boot_id FROM slots"):
        (live if is_alive(ProcessIdentity(pid, start, boot)) else dead).append((sid, root))
    conn.executemany("DELETE FROM slots WHERE id = ?", [(sid,) for sid, _ in dead])
    return live


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
) -> Grant:
    """Decide, in one transaction, which of ``wants`` start now; reserve their slots under ``who``.

    ``asleep``: how long since this project's previous tick when that was more than ``WAKE_GAP`` (a wake).
    Other projects whose waiting groups are ahead of these with a slot free are asked to tick
    (``Grant.kick``).
    """
    grant = Grant()
    grant.cap = cap if cap is not None else max_scheduled_runs(home)[0]
    stamp = to_iso(now)
    conn = _open(home)
    try:
        with _writing(conn):
            live = _live(conn)
            grant.alive = len(live)
            conn.execute(
                "DELETE FROM waiting WHERE root = ? OR seen_at < ?", (root, to_iso(now - STALE_AFTER))
            )
            conn.execute("DELETE FROM kicks WHERE root = ?", (root,))  # this project's tick has come
            others = _others(conn, stamp)
            room, wake, in_wake = _room(conn, grant.cap, len(live), stamp)
            if asleep is not None and not in_wake:
                wake = {"at": stamp, "until": to_iso(now + WAKE_LASTS), "started": 0}
                in_wake = True
                due = len(wants) + len(others)
                groups = "group" if due == 1 else "groups"
                grant.wake_line = f"woke after {words(asleep.total_seconds())}; {due} {groups} due"
            grant.room = room
            mine = sorted(wants, key=lambda w: (w.fire, w.key))
            order = sorted([*others, *((w.fire, root, w.key) for w in mine)])
            ahead = {(r, g) for _, r, g in order[:room]}
            for want in mine:
                if (root, want.key) in ahead:
                    sid = f"{root}\x00{want.key}\x00{stamp}\x00{who.pid}"
                    conn.execute(
                        "INSERT OR REPLACE INTO slots (id, root, pid, proc_start, boot_id, taken_at)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        (sid, root, who.pid, who.start, who.boot, stamp),
                    )
                    grant.start.append((want, sid))
                else:
                    grant.waiting.append(want)
                    conn.execute(
                        "INSERT OR REPLACE INTO waiting (root, grp, fire, seen_at) VALUES (?, ?, ?, ?)",
                        (root, want.key, want.fire, stamp),
                    )
            if in_wake:
                wake["started"] = int(wake.get("started", 0)) + len(grant.start)
                _put_meta(conn, "wake", wake)
            grant.kick = _kick(conn, [(r, g) for _, r, g in order[:room] if r != root], now)
            grant.queued = len(others) + len(grant.waiting)
    finally:
        conn.close()
    return grant


def _others(conn: sqlite3.Connection, stamp: str | None = None) -> list[tuple[str, str, str]]:
    """(fire, root, group) of the waiting groups of the user (seen up to ``stamp``, when given: a tick
    decides only over what was queued by its own instant; a slot handed on goes to whatever waits)."""
    rows = conn.execute("SELECT root, grp, fire FROM waiting WHERE seen_at <= ?", (stamp or "\uffff",))
    return [(fire, r, grp) for r, grp, fire in rows]


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
    last ``KICK_LASTS``; returns the projects to tick now."""
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
    return out


@_translated
def hand_over(home: Path, who: ProcessIdentity, now: datetime, cap: int | None = None) -> list[str]:
    """A scheduled run that ends gives its slot back and names the projects to tick now (the groups
    first in the order, as many as slots are free). Nothing for a process that holds no slot (a run by
    hand, or a run whose tick had not handed it its slot yet: the next minute's tick then fills it)."""
    path = home / FILE
    if not path.is_file():
        return []
    limit = cap if cap is not None else max_scheduled_runs(home)[0]
    stamp = to_iso(now)
    conn = _open(home)
    try:
        with _writing(conn):
            gave = conn.execute(
                "DELETE FROM slots WHERE pid = ? AND proc_start IS ? AND boot_id IS ?",
                (who.pid, who.start, who.boot),
            ).rowcount
            kicks: list[str] = []
            if gave:
                conn.execute("DELETE FROM waiting WHERE seen_at < ?", (to_iso(now - STALE_AFTER),))
                kicks = _kick_heads(conn, limit, stamp, now)
    finally:
        conn.close()
    return kicks


def _kick_heads(conn: sqlite3.Connection, limit: int, stamp: str, now: datetime) -> list[str]:
    """Inside the caller's transaction: ask the projects at the head of the waiting order to tick, as
    many as there is room for now (a slot given back, or a project's groups gone from the queue)."""
    room, _, _ = _room(conn, limit, len(_live(conn)), stamp)
    order = sorted(_others(conn))
    return _kick(conn, [(r, g) for _, r, g in order[:room]], now)


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
        stamp = to_iso(now)
        with _writing(conn):
            conn.execute(
                "DELETE FROM waiting WHERE root = ? OR seen_at < ?", (root, to_iso(now - STALE_AFTER))
            )
            conn.execute("DELETE FROM kicks WHERE root = ?", (root,))
            kicks = _kick_heads(conn, limit, stamp, now)
    finally:
        conn.close()
    return kicks


@_translated
def attach(home: Path, slot_id: str, child: ProcessIdentity) -> None:
    """Hand a reserved slot to the run that was spawned for it (its liveness now holds the slot)."""
    conn = _open(home)
    try:
        conn.execute(
            "UPDATE slots SET pid = ?, proc_start = ?, boot_id = ? WHERE id = ?",
            (child.pid, child.start, child.boot, slot_id),
        )
    finally:
        conn.close()


@_translated
def release(home: Path, slot_id: str) -> None:
    """Give back a slot whose run could not be started."""
    conn = _open(home)
    try:
        conn.execute("DELETE FROM slots WHERE id = ?", (slot_id,))
    finally:
        conn.close()


def queue_view(home: Path, now: datetime) -> dict[str, Any]:
    """The cap, the live scheduled runs and the waiting groups of the whole user (read-only; status)."""
    cap, why = max_scheduled_runs(home)
    out: dict[str, Any] = {"cap": cap, "running": 0, "waiting": [], "capProblem": why}
    path = home / "slots.sqlite"
    if not path.is_file():
        return out
    try:
        conn = sqlitefile.connect(path, "read", timeout=2.0)
        try:
            rows = conn.execute("SELECT pid, proc_start, boot_id FROM slots").fetchall()
            out["running"] = sum(1 for pid, s, b in rows if is_alive(ProcessIdentity(pid, s, b)))
            fresh = to_iso(now - STALE_AFTER)
            waiting = conn.execute(
                "SELECT root, grp, fire FROM waiting WHERE seen_at >= ? ORDER BY fire, root, grp", (fresh,)
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return out
    out["waiting"] = [
        {"root": r, "assets": g.split(","), "fire": f, "since": _since(f, now)} for r, g, f in waiting
    ]
    return out


def queue_json(home: Path, now: datetime) -> dict[str, Any]:
    """What ``croft schedule status`` says about the user's queue: the cap, the runs going, the waiting
    groups (oldest fire first) and one line of text."""
    out = queue_view(home, now)
    out["waitingCount"] = len(out["waiting"])
    going = f"{out['running']} of {out['cap']} scheduled runs going"
    out["text"] = f"{out['waitingCount']} waiting to start; {going}" if out["waiting"] else going
    return out


def _since(fire: str, now: datetime) -> str:
    try:
        return words(max(0.0, (now - parse_instant(fire)).total_seconds()))
    except ValueError:
        return ""
