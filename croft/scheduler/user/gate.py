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
contract and ``tests/scheduler/test_gate.py``.
"""

from __future__ import annotations

import os

__all__ = ["FILE", "KINDS", "MAGIC", "enter", "gate", "knob_line", "stat_line", "trust_line", "wal_line"]

FILE = "wake"
MAGIC = "croft-wake 1"
BEATS = "idle-beats.json"  # heartbeat.USER_BEATS (checked by a test: the gate imports no heartbeat)
LOW_SPACE_BYTES = 1024 * 1024  # the same floor as core.disk (checked by a test)


def stat_line(path: str) -> str:
    """The stamp of one path: what of its ``stat`` matters (type and mode, inode, device, links, owner,
    group, size, modification time), ``-`` when it is not there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "-"
    return f"{st.st_mode} {st.st_ino} {st.st_dev} {st.st_nlink} {st.st_uid} {st.st_gid} {st.st_size} {st.st_mtime_ns}"


def wal_line(path: str) -> str:
    """The stamp of a SQLite WAL: an empty one (a reader's open leaves one) holds nothing, as none."""
    line = stat_line(path)
    return "-" if line.split(" ")[6:7] == ["0"] else line


def trust_line(path: str) -> str:
    """The trust facts of a path croft itself rewrites every minute (croft's home, its logs folder, the
    minute lock, the heartbeat file): type and mode, owner, group; ``-`` when it is not there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "-"
    return f"{st.st_mode} {st.st_uid} {st.st_gid}"


def knob_line(environ: os._Environ[str] | dict[str, str]) -> str:
    """The croft knobs of the environment but the clock, as one line: another value is another minute."""
    return "\x1f".join(
        sorted(f"{k}={v}" for k, v in environ.items() if k.startswith("CROFT_") and k != "CROFT_NOW")
    )


KINDS = {"s": stat_line, "t": trust_line, "w": wal_line}


def _now() -> tuple[str, float] | None:
    """(now as croft's ISO text, the same in seconds since the epoch); None when ``CROFT_NOW`` is set but
    not plain (the full tick reads it and says what is wrong)."""
    text = os.environ.get("CROFT_NOW", "").strip()
    if not text:
        import time

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
    import time

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
    if now is None or len(lines) < 7 or lines[0] != MAGIC:
        return False
    stamp = now[0]
    after, until, knobs, disks, beats = lines[1:6]
    if not (after <= stamp < until) or knobs != knob_line(os.environ):
        return False
    for line in lines[6:]:
        if not line:
            continue
        expected, _, path = line.partition("\t")
        try:
            if KINDS[expected[0]](path) != expected[1:]:
                return False
        except (OSError, KeyError):  # cannot be looked at (or not a line croft wrote): the full tick's
            return False
    for folder in disks.split("\t") if disks else ():
        try:
            vfs = os.statvfs(folder)
        except OSError:
            return False
        if vfs.f_flag & os.ST_RDONLY or (vfs.f_blocks and vfs.f_bavail * vfs.f_frsize < LOW_SPACE_BYTES):
            return False
    return _beat(home, stamp, beats)


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
