"""Who a process is: pid plus its start time plus the boot id, so a reused pid is never taken for a live run.

A pid alone lies after a reboot or once the kernel hands the number to someone else; the start time (in
clock ticks since boot, from /proc) and the boot id together pin down one process for its whole life.
Where the platform cannot tell (no /proc), liveness falls back to "the pid exists" and says so by
returning None for the parts it could not read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cache

__all__ = ["ProcessIdentity", "boot_id", "current", "is_alive", "start_time"]


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """pid, start time, boot id."""

    pid: int
    start: str | None
    boot: str | None

    def to_dict(self) -> dict[str, object]:
        return {"pid": self.pid, "procStart": self.start, "bootId": self.boot}


@cache
def boot_id() -> str | None:
    """This boot's id (Linux: the kernel's random boot id; macOS: the boot time)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip() or None
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "kern.boottime"], capture_output=True, text=True, timeout=5)
            return out.stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            return None
    return None


def start_time(pid: int) -> str | None:
    """The process's start time as the kernel reports it, or None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        if sys.platform == "darwin":
            try:
                out = subprocess.run(
                    ["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=5
                )
                return out.stdout.strip() or None
            except (OSError, subprocess.SubprocessError):
                return None
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def current() -> ProcessIdentity:
    pid = os.getpid()
    return ProcessIdentity(pid=pid, start=start_time(pid), boot=boot_id())


def _pid_exists(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_alive(who: ProcessIdentity) -> bool:
    """True only when the very process recorded is still running on this boot.

    A zombie (ended, not yet reaped) counts as dead: it will never write again.
    """
    if who.boot and boot_id() and who.boot != boot_id():
        return False
    if not _pid_exists(who.pid):
        return False
    if _is_zombie(who.pid):
        return False
    if who.start is None:
        return True
    now_start = start_time(who.pid)
    return now_start is None or now_start == who.start


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[:1] == ["Z"]
