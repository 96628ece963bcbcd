"""The slots themselves: lock files a live scheduled run holds until it exits.

A slot of the per-user cap is ``<CROFT_HOME>/slots/cap.<i>.lock`` and a slot of pool ``stripe`` is
``slots/pool.stripe.<i>.lock``, each held with ``flock``. The tick that starts a scheduled run takes the
locks the run needs (``grab``) and the run inherits them (``pass_fds``); the tick closes its copies as soon
as the run is started, so from then on the ``croft run --due`` process alone holds them, and the kernel
lets them go the instant it exits, however it exits (a crash, a kill, the machine going down). No record
can say a dead run still holds a slot, or a live one none: the count of held slots is the count of live
runs. The run learns which descriptors are its slots from ``CROFT_SLOT_FDS`` (``adopt``), takes the
variable out of its environment and marks them not to be inherited, so nothing its asset code starts can
keep a slot past the run.

A run that ends hands its slots on (``scheduler.tick.afterrun``) without ever letting go of them: the
next run is started behind a tiny launcher that waits for the ending run to exit before it becomes
``croft run --due`` (``scheduler.tick.start``), so a slot is never held by two runs at once.

Counting and taking happen only inside the queue's one write transaction (``scheduler.tick.slots``), so
two ticks can never both take the last slot. Imports only ``os`` and ``fcntl``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from croft.core.private import make_dirs

__all__ = [
    "CAP",
    "ENV_NAME",
    "FOLDER",
    "MOST",
    "Lock",
    "adopt",
    "count_held",
    "env_value",
    "grab",
    "let_go",
    "pool_resource",
    "resource_of",
]

FOLDER = "slots"
ENV_NAME = "CROFT_SLOT_FDS"
CAP = "cap"
MOST = 64  # the cap's and a pool's highest size (knobs: CROFT_MAX_SCHEDULED_RUNS is 1 to 64)


@dataclass(frozen=True)
class Lock:
    """One slot held by this process: its file's name (``cap.0``, ``pool.stripe.0``) and descriptor."""

    name: str
    fd: int

    @property
    def resource(self) -> str:
        return resource_of(self.name)


def resource_of(name: str) -> str:
    """``cap`` or ``pool.<name>``: what a slot file is a slot of."""
    return name.rpartition(".")[0]


def pool_resource(pool: str) -> str:
    return f"pool.{pool}"


def _path(home: Path, name: str) -> str:
    return os.path.join(home, FOLDER, f"{name}.lock")


def _try(path: str) -> int | None:
    """The file opened and locked, or None while someone else holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def count_held(home: Path, resource: str, spare: tuple[Lock, ...] = ()) -> int:
    """How many slots of ``resource`` live processes hold, not counting ``spare`` (this process's own,
    being handed on). Each file is tried and let go at once."""
    folder = os.path.join(home, FOLDER)
    mine = {lock.name for lock in spare}
    held = 0
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    for entry in names:
        name = entry[: -len(".lock")] if entry.endswith(".lock") else ""
        if not name or resource_of(name) != resource or name in mine:
            continue
        fd = _try(os.path.join(folder, entry))
        if fd is None:
            held += 1
        else:
            os.close(fd)
    return held


def grab(home: Path, resource: str, spare: list[Lock]) -> Lock | None:
    """A slot of ``resource`` for a run about to start: one of ``spare`` (taken out of it) when it has
    one, else a free file; None when every file is held."""
    for lock in spare:
        if lock.resource == resource:
            spare.remove(lock)
            return lock
    make_dirs(os.path.join(home, FOLDER))
    for index in range(MOST * 2):  # a lowered cap may leave higher files held a while
        name = f"{resource}.{index}"
        fd = _try(_path(home, name))
        if fd is not None:
            return Lock(name, fd)
    return None


def let_go(locks: Sequence[Lock]) -> None:
    """Close this process's copies (the run started with them keeps its own)."""
    for lock in locks:
        with contextlib.suppress(OSError):
            os.close(lock.fd)


def env_value(locks: list[Lock]) -> str:
    return ",".join(f"{lock.name}={lock.fd}" for lock in locks)


def adopt(home: Path, environ: MutableMapping[str, str]) -> tuple[Lock, ...]:
    """At the start of a scheduled run: the slots its tick handed it (``CROFT_SLOT_FDS``), taken out of
    the environment and kept from every process the run starts. Only a descriptor open on the very slot
    file it names counts; anything else in the variable is ignored."""
    text = environ.pop(ENV_NAME, "")
    locks: list[Lock] = []
    for part in text.split(","):
        name, _, number = part.partition("=")
        if not number.isdigit() or not resource_of(name):
            continue
        fd = int(number)
        try:
            held, named = os.fstat(fd), os.stat(_path(home, name))
            if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
                continue
            os.set_inheritable(fd, False)
        except OSError:
            continue
        locks.append(Lock(name, fd))
    return tuple(locks)
