"""The minute gate: the first thing ``croft tick --all`` runs, and the only module with an import budget.

Most minutes of most users need nothing: no fire, retry, ceiling, reminder or freshness breach has come,
and nothing a tick reads has moved. The full per-user tick (``scheduler.user.tick_all``) knows that
when it ends a minute in which every project was only beaten, and writes it down in one file,
``<CROFT_HOME>/wake``: the earliest instant anything may need a look, the ``stat`` of every file whose
change matters (the registry and croft's home with its files, and per project its folder, croft.json,
assets/ with each asset file and local module, lib/, its history and WAL, its state folder, its
incident file), which carry the trust facts too (owner, mode), the environment's croft knobs, and the
heartbeat to write. The next minute, this module reads that file, stats those paths and the disks, and
when all is as it was and the instant has not come, writes the minute's heartbeat and ends. Anything
else (a moved stamp, the instant, a clock that went back, no wake file, a file it cannot read, a disk
short of space, any error) hands the minute to the full tick, which writes the file anew. An edit is
noticed the next minute; a project with a ping never gets a wake file (pings go out every minute).

Imports ``os`` only (``datetime`` when ``CROFT_NOW`` is set): the budget is checked by an import-linter
contract and ``tests/scheduler/user/test_user_gate.py``.
"""

from __future__ import annotations

import os

__all__ = ["FILE", "MAGIC", "enter", "gate", "knob_line", "stamp"]

FILE = "wake"
MAGIC = "croft-wake 2"
BEATS = "idle-beats.json"  # heartbeat.USER_BEATS (checked by a test: the gate imports no heartbeat)
LOW_SPACE_BYTES = 1024 * 1024  # the same floor as core.disk (checked by a test)


def stamp(full: list[str], trust: list[str], wals: list[str]) -> tuple[int, int]:
    """(one number for the stats of every path, the newest modification time among ``full``). ``full``:
    what of each ``stat`` matters (type and mode, inode, device, links, owner, group, size, modification
    time); ``trust``: paths croft itself rewrites every minute (its home, the minute lock, the heartbeat
    file, a state folder whose mtime moves with every reader), only their type and mode, owner and group;
    ``wals``: SQLite WALs, an empty one (a reader's open leaves one) the same as none. The number is the
    hash of a tuple of integers, which Python computes the same in every process. Raises OSError when a
    path cannot be looked at.

    It runs for every path of every project every minute, so it is written for the interpreter's sake:
    one flat list, no text made per path, ``access`` before a ``stat`` that usually finds nothing."""
    values: list[object] = []
    add = values.append
    stat = os.stat
    newest = 0
    for path in full:
        try:
            st = stat(path)
        except FileNotFoundError:
            add(-1)
            continue
        add(st[:7])
        mtime = st.st_mtime_ns
        add(mtime)
        if mtime > newest:
            newest = mtime
    add(-2)
    for path in trust:
        try:
            st = stat(path)
        except FileNotFoundError:
            add(-1)
            continue
        add((st.st_mode, st.st_uid, st.st_gid))
    add(-2)
    access, exists = os.access, os.F_OK
    for path in wals:
        wal = stat(path) if access(path, exists) else None
        if wal is None or not wal.st_size:
            add(-1)
        else:
            add(wal[:7])
            add(wal.st_mtime_ns)
    return hash(tuple(values)), newest


def knob_line(environ: os._Environ[str] | dict[str, str]) -> str:
    """The croft knobs of the environment but the clock, as one line: another value is another minute."""
    return "\x1f".join(
        sorted(f"{k}={v}" for k, v in environ.items() if k.startswith("CROFT_") and k != "CROFT_NOW")
    )


def _now() -> tuple[str, float] | None:
    """(now as croft's ISO text, the same in seconds since the epoch); None when ``CROFT_NOW`` is set but
    not plain (the full tick reads it and says what is wrong)."""
    import time

    text = os.environ.get("CROFT_NOW", "").strip()
    if not text:
        seconds = time.time()
    elif text.isdigit():
        seconds = int(text) / 1000
    else:
        from datetime import datetime

        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            return None
        seconds = moment.timestamp()
    whole = int(seconds // 1)
    millis = int((seconds - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z", seconds


def enter() -> bool:
    """The OS job's minute (``croft tick --all`` without ``--json``): whether the gate settled it. A
    ``CROFT_HOME`` that is not plain absolute text is the full tick's to judge."""
    home = os.environ.get("CROFT_HOME", "").strip() or os.path.expanduser("~/.croft")
    if not home.startswith("/") or "\n" in home:
        return False
    return gate(home.rstrip("/") or "/")


def gate(home: str) -> bool:
    """Whether this minute is settled here (its heartbeat written); False hands it to the full tick."""
    try:
        with open(f"{home}/{FILE}", encoding="utf-8", errors="strict") as handle:
            st = os.fstat(handle.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:  # only croft's own file is believed
                return False
            lines = handle.read().split("\n")
    except (OSError, ValueError):
        return False
    now = _now()
    if now is None or len(lines) < 8 or lines[0] != MAGIC:
        return False
    at = now[0]
    after, until, knobs, disks, beats = lines[1:6]
    if not (after <= at < until) or knobs != knob_line(os.environ):
        return False
    try:
        counts = [int(n) for n in lines[7].split(" ")]
        first, second = 8 + counts[0], 8 + counts[0] + counts[1]
        found = stamp(lines[8:first], lines[first:second], lines[second : second + counts[2]])[0]
    except (OSError, ValueError, IndexError):  # cannot be looked at, or not what croft wrote: the full tick's
        return False
    if str(found) != lines[6]:
        return False
    for folder in disks.split("\t") if disks else ():
        try:
            vfs = os.statvfs(folder)
        except OSError:
            return False
        if vfs.f_flag & os.ST_RDONLY or (vfs.f_blocks and vfs.f_bavail * vfs.f_frsize < LOW_SPACE_BYTES):
            return False
    return _beat(home, at, beats)


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
