"""Which `croft run --due` processes are alive at one instant, read from /proc (Linux): what the cap and
the pools promise to bound. The tests of the cap and ``scripts/bench scale`` count with it."""

from __future__ import annotations

import os

__all__ = ["due_runs", "running_due"]


def running_due(pid: str) -> str | None:
    """The folder of process ``pid`` when it is a live `croft run --due`, else None. A run's own fork
    that has not yet become what it starts shows the run's command line (and, once it moved there, the
    folder of what it starts): a process with its parent's very command line, run id included, is that
    run, not another. (A run a run starts has a run id of its own, so it is never left out this way.)"""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
        if b"\0-m\0croft\0run\0--due\0" not in command:
            return None
        with open(f"/proc/{pid}/stat") as handle:
            state, ppid = handle.read().rpartition(")")[2].split()[:2]
        if state == "Z":
            return None
        with open(f"/proc/{ppid}/cmdline", "rb") as handle:
            if handle.read() == command:  # the run's fork, its very command line (run id included)
                return None
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None  # ended meanwhile


def due_runs() -> list[tuple[int, str]]:
    """(pid, its project folder) of the `croft run --due` processes alive at one instant. Reading /proc
    takes a while, and a run ending early in the read and the next one beginning late in it would both
    be seen: so each found is looked at again once the read is over, and only those still running count
    (a run's own fork showing its command line an instant before it becomes something else drops out
    the same way)."""
    found = [(pid, running_due(pid)) for pid in os.listdir("/proc") if pid.isdigit()]
    first = [(pid, cwd) for pid, cwd in found if cwd is not None]
    return [(int(pid), cwd) for pid, cwd in first if running_due(pid) == cwd]
