"""A scheduled run's whole process group: the run, and every process its asset code started.

The tick starts each scheduled run in a session of its own (``core.children.detach``), so the run leads a
process group that its children join, and their children: a ``sleep 600 &`` in a shell an asset started
is still in the group after that shell (and the run) ended. A group outlives its leader, untracked, so
each way a run ends ends the group with it:

- the run itself, as it finishes (``end_own_group``: the run is done, so whatever is left of its group
  is left over);
- the tick's ceiling, past ``max_runtime`` (``end_group`` on the recorded run);
- the first tick after a run ended any other way (a crash, a kill): ``end_group`` on its noted process.

A group is only ever signalled while it is provably the run's: the run itself still leads it, or no
process holds the run's pid any more (then the pid cannot have been handed out again, since the system
never reuses the id of a process group that still has members). On Linux each member is also checked in
``/proc`` to belong to the run's session. A process that left the group on purpose (``setsid``, a
daemon's double fork) is out of reach, as it is for a terminal's job control.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from croft.core.identity import ProcessIdentity, is_alive, start_time

__all__ = ["END_GRACE_S", "end_group", "end_own_group", "group_alive", "members"]

END_GRACE_S = 2.0


def members(pgid: int) -> list[int] | None:
    """The pids in process group ``pgid`` and its session (a run leads both), from ``/proc``; None where
    there is no /proc to read (then only ``killpg`` can reach them)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    found = []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[0] != "Z" and fields[2] == str(pgid) and fields[3] == str(pgid):
            found.append(int(name))
    return found


def group_alive(pgid: int) -> bool:
    """Whether any process is still in the group (a zombie leader counts as none)."""
    listed = members(pgid)
    if listed is not None:
        return bool(listed)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ours(run: ProcessIdentity) -> bool:
    """Whether group ``run.pid`` is still the run's: the pid is free, or still the run's own process."""
    if run.pid <= 1:
        return False
    now = start_time(run.pid)
    if now is None:
        try:
            os.kill(run.pid, 0)
        except ProcessLookupError:
            return True  # no process has the pid: the group (if any) is the run's
        except PermissionError:
            return False
        return run.start is None  # the pid lives but cannot be told apart: only trust a run without a record
    return run.start is not None and now == run.start


def _signal_group(pgid: int, sig: int, skip: int | None = None) -> None:
    """Each member but ``skip`` (where /proc lists them), else the whole group at once."""
    listed = members(pgid)
    for pid in [-pgid] if listed is None else [p for p in listed if p != skip]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)  # a negative pid is the group


def _wait(gone: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not gone():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def end_group(run: ProcessIdentity, grace_s: float) -> str:
    """End every process of the run's group: SIGTERM (+ SIGCONT, for a stopped one), then SIGKILL after
    ``grace_s``. Returns ``gone`` (nothing was left, or the group is no longer the run's), ``term`` or
    ``kill``."""
    if not _ours(run):
        return "gone"
    try:
        alone = os.getpgid(run.pid) != run.pid  # alive, but it leads no group (not started by a tick)
    except ProcessLookupError:
        alone = False
    if alone:

        def alive() -> bool:
            return is_alive(run)

        def send(sig: int) -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(run.pid, sig)

    else:

        def alive() -> bool:
            return group_alive(run.pid)

        def send(sig: int) -> None:
            _signal_group(run.pid, sig)

    if not alive():
        return "gone"
    for sig in (signal.SIGTERM, signal.SIGCONT):
        send(sig)
    if _wait(lambda: not alive(), grace_s):
        return "term"
    send(signal.SIGKILL)
    _wait(lambda: not alive(), 5.0)
    return "kill"


def end_own_group(grace_s: float = END_GRACE_S) -> None:
    """At the end of a scheduled run: end what is left of its group besides itself. Only a process that
    leads its own session does this (a run the tick started), never a run typed in a terminal, whose group
    is the shell's job (a pipeline's ``tee`` is in it)."""
    me = os.getpid()
    try:
        if os.getsid(0) != me or os.getpgrp() != me:
            return
    except OSError:
        return
    others = members(me)
    if others is not None and others == [me]:
        return
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the run's own SIGTERM is not for itself
    try:
        _signal_group(me, signal.SIGTERM, skip=me)
        _signal_group(me, signal.SIGCONT, skip=me)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if others is None:  # no /proc: SIGTERM is all that reaches them without signalling this process too
        return
    if not _wait(lambda: (members(me) or [me]) == [me], grace_s):
        _signal_group(me, signal.SIGKILL, skip=me)
