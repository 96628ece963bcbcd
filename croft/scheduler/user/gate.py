"""The minute gate: the first thing ``croft tick --all`` runs, and the only module with an import budget.

The OS job enters it through ``cli/minute.py`` (``python -S -P``: nothing of ``site`` or the CLI is loaded
first); a person's ``croft tick --all`` through ``cli/main.py``.

Most minutes of most users need nothing: no fire, retry, ceiling, reminder or freshness breach has come, and
nothing a tick reads has moved. The full per-user tick (``scheduler.user.tick_all``) knows that when it ends
a minute in which every project was only beaten, and writes it down in the header part of the file it writes
every minute, ``<CROFT_HOME>/wake`` (``wakefile``; the rest, each project's memory for the next full minute,
is not read here): the earliest instant anything may need a look, the ``stat`` of every path whose change
can make a minute need work (the registry and croft's home with its files, and per project croft.json,
assets/ and each folder under it, lib/, its history and WAL, its incident file), which carry the trust facts
too (owner, mode), one folder of each disk, the environment's croft knobs, and the heartbeat to write. The
next minute, this module reads that file, stats those paths and the disks, and when all is as it was and the
instant has not come, writes the minute's heartbeat and ends. Anything else (a moved stamp, the instant, a
clock that went back, no wake file or no part for the gate, a file it cannot read, a disk short of space,
any error) hands the minute to the full tick, which writes the file anew. A file saved by rename, a config
edit or a run is noticed the next minute; an asset rewritten in place at the next full minute (``wakefile``
says why that is safe). Dead-man's-switch pings go out every minute: a settled minute owes those of the
projects it beat, which the full tick wrote as the last line of the gate's part; the gate hands that line to
its caller unread (it imports no ``json``), and the caller sends them (``user.settled``, over
``user.pingbeat``).

Imports ``os``, ``itertools`` and ``operator`` only (``datetime`` when ``CROFT_NOW`` has an offset): the
budget is checked by an import-linter contract and ``tests/scheduler/user/test_user_gate.py``.
"""

import os  # no ``from __future__ import annotations``: one module fewer to load every minute
from itertools import repeat
from operator import attrgetter, itemgetter

__all__ = ["FILE", "MAGIC", "enter", "gate", "knob_line", "part_size", "stamp"]

FILE = "wake"
MAGIC = "croft-wake 6"  # the header: then the length of the gate's part (wakefile.write)
BEATS = "idle-beats.json"  # heartbeat.USER_BEATS (checked by a test: the gate imports no heartbeat)
LOW_SPACE_BYTES = 1024 * 1024  # the same floor as core.disk (checked by a test)
# what of a path's stat is compared: all that a change of content, name, owner or mode moves (the
# modification time last: the writer takes the newest of them); croft's own minute files, who owns them
_FULL = attrgetter("st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size", "st_mtime_ns")
_TRUST = attrgetter("st_mode", "st_uid", "st_gid")


def stamp(full: list[str], trust: list[str], absent: list[str], wals: list[str]) -> tuple[int, int]:
    """(one number for the stats of every path, the newest modification time among ``full``). ``full``:
    paths that exist, and what of each ``stat`` matters (type and mode, inode, device, links, owner,
    group, size, modification time); ``trust``: paths croft itself rewrites every minute (its home, its
    logs, the minute lock, the heartbeat file, when there), only their type and mode, owner and group;
    ``absent``: paths that were not there (one that comes moves the number);
    ``wals``: SQLite WALs, an empty one (a reader's open leaves one) the same as none. The number is a
    hash of tuples of integers, which Python computes the same in every process. Raises OSError when a
    path of ``full`` or ``trust`` cannot be looked at (gone included).

    It runs for every path of every project every minute, and the ``stat`` calls are most of an idle
    minute, so each group is one pass of ``map`` over ``os.stat`` and an ``attrgetter``: the loop, the
    stat and the fields taken all run in C, nothing else is done per path."""
    stat, there = os.stat, os.F_OK
    files = tuple(map(_FULL, map(stat, full)))
    owners = tuple(map(_TRUST, map(stat, trust)))
    came = tuple(map(os.access, absent, repeat(there)))
    written: tuple[object, ...] = tuple(map(os.access, wals, repeat(there)))
    if any(written):  # a WAL there: its stat, unless it is empty (as a reader's open leaves it)
        written = tuple(_wal(path) for path in wals)
    newest = max(map(itemgetter(-1), files), default=0)
    return hash((files, owners, came, written)), newest


def _wal(path: str) -> tuple[int, ...] | bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    return _FULL(st) if st.st_size else False


def knob_line(environ: os._Environ[str] | dict[str, str]) -> str:
    """The croft knobs of the environment but the clock, as one line: another value is another minute."""
    return "\x1f".join(
        sorted(f"{k}={v}" for k, v in environ.items() if k.startswith("CROFT_") and k != "CROFT_NOW")
    )


def _now() -> str | None:
    """Now as croft's ISO text; None when ``CROFT_NOW`` is set but not plain (the full tick reads it and
    says what is wrong)."""
    import time

    text = os.environ.get("CROFT_NOW", "").strip()
    if not text:
        seconds = time.time()
    elif text.isdigit():
        seconds = int(text) / 1000
    elif (found := _utc_text(text)) is not None:
        return found
    else:
        from datetime import datetime  # an offset: only then the cost of datetime

        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            return None
        seconds = moment.timestamp()
    whole = int(seconds // 1)
    millis = int((seconds - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _utc_text(text: str) -> str | None:
    """``YYYY-MM-DDTHH:MM:SS[.mmm]Z`` (how tests and people write ``CROFT_NOW``) as croft's text, or None
    for any other form (and years before 1000, which croft's clock writes unpadded): read without
    ``datetime``, whose import costs a tenth of an idle minute."""
    if len(text) == 20:
        text = text[:19] + ".000Z"
    if len(text) != 24 or text[23] != "Z" or text[4:20:3] != "--T::.":
        return None
    parts = (text[0:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19], text[20:23])
    if not all(p.isdigit() and p.isascii() for p in parts):
        return None
    year, month, day, hour, minute, second = (int(p) for p in parts[:6])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not (1000 <= year <= 9998 and 1 <= month <= 12 and hour < 24 and minute < 60 and second < 60):
        return None
    if not 1 <= day <= _DAYS[month - 1] - (month == 2 and not leap):
        return None
    return text


def enter() -> str | None:
    """The OS job's minute (``croft tick --all`` without ``--json``): None hands it to the full tick; else
    the gate settled it and this is the pings it owes (``gate``). A ``CROFT_HOME`` that is not plain
    absolute text is the full tick's to judge."""
    home = os.environ.get("CROFT_HOME", "").strip() or os.path.expanduser("~/.croft")
    if not home.startswith("/") or "\n" in home:
        return None
    return gate(home.rstrip("/") or "/")


def gate(home: str) -> str | None:
    """The minute settled here (its heartbeat written): the pings it owes, as the full tick wrote them (a
    JSON list of ``[url, state folder]``, for ``user.pingbeat``), or ``""`` when it owes none. None hands
    the minute to the full tick."""
    try:
        with open(f"{home}/{FILE}", "rb") as handle:
            size = part_size(handle.fileno(), handle.readline(64))
            if not size:  # not croft's own file, or 0: the full tick's minute
                return None
            part = handle.read(size)  # the gate's part only: the per-project rest is the full tick's
        lines = part.decode("utf-8").split("\n")
    except (OSError, ValueError):
        return None
    at = _now()
    if at is None or len(lines) < 8 or len(part) != size:
        return None
    after, until, knobs, disks, beats = lines[0:5]
    if not (after <= at < until) or knobs != knob_line(os.environ):
        return None
    try:
        groups, start = [], 7
        for count in map(int, lines[6].split(" ")):
            groups.append(lines[start : start + count])
            start += count
        found = stamp(*groups)[0]
    except (
        OSError,
        ValueError,
        IndexError,
        TypeError,
    ):  # cannot be looked at, or not what croft wrote: the full tick's
        return None
    if str(found) != lines[5]:
        return None
    for folder in disks.split("\t") if disks else ():
        try:
            vfs = os.statvfs(folder)
        except OSError:
            return None
        if vfs.f_flag & os.ST_RDONLY or (vfs.f_blocks and vfs.f_bavail * vfs.f_frsize < LOW_SPACE_BYTES):
            return None
    if not _beat(home, at, beats):
        return None
    owed = lines[-2]  # the part's last line (each line is ended): the pings (wakefile._gate_part)
    return "" if owed == "[]" else owed


def part_size(fd: int, header: bytes) -> int | None:
    """The length of the gate's part, from the wake file open at ``fd`` and its first line ``header``;
    None unless the file is this user's and no one else may write it and the line is this croft's header.
    The one rule both readers of the file believe it by (``wakefile`` reads the per-project rest)."""
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    magic, _, size = header.rstrip(b"\n").rpartition(b" ")
    return int(size) if magic == MAGIC.encode() and size.isdigit() else None


def _beat(home: str, stamp: str, roots: str) -> bool:
    """The minute's heartbeat of every project the wake file names (``heartbeat.USER_BEATS``, written
    whole: temp and rename), and the minute lock's mark (``tick_all.ticked_lately``)."""
    path = f"{home}/{BEATS}"
    tmp = f"{home}/.{BEATS}.{os.getpid()}.tmp"
    data = ('{"at": "' + stamp + '", "roots": ' + roots + "}").encode()
    try:
        try:  # noqa: SIM105 - contextlib is not in the gate's budget
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        os.utime(f"{home}/tick-all.lock")
    except OSError:  # the full tick writes it, or says why it cannot
        return False
    return True
