"""A real systemd user manager for a test, on a machine that was not booted with systemd.

``systemd --user`` refuses to start unless ``/run/systemd/system`` exists (the sign that systemd is PID
1). A private mount namespace gives it one without touching the machine: ``unshare -m`` with private
propagation, a tmpfs over ``/run/systemd`` holding an empty ``system/``, a runtime folder of its own
(``XDG_RUNTIME_DIR``, short: its sockets' paths must fit in 108 bytes) with a ``dbus-daemon --session``
in it, then ``systemd --user``. Its configuration is a folder of the test's (``XDG_CONFIG_HOME``, so
units go there, never into root's ~/.config), and ``HOME`` is another.

A user manager also takes over the control group it finds itself in, and one started by root in the
machine's root group moves every process of the machine into an ``init.scope`` of its own. So it starts
in a group made for it (``croft-test-…`` in the name=systemd and cgroup2 hierarchies), inside a cgroup
namespace whose root that group is, with only those two hierarchies mounted in its mount namespace: all
it can see and change is its own group.

Commands meant for it run inside the namespace (``nsenter --mount``) with its environment
(``UserManager.env``/``run``). Afterwards every process of the namespace is ended (the manager, the bus,
whatever the units started, the runs those started in sessions of their own) and waited for; the mounts
go with the namespace, its control groups are removed, and so are the folders. Needs root, ``unshare``,
``nsenter``, ``dbus-daemon`` and systemd; ``why_not`` says which is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from waiting import wait_for

SYSTEMD = next((p for p in ("/lib/systemd/systemd", "/usr/lib/systemd/systemd") if os.path.exists(p)), None)
PROGRAMS = ("unshare", "nsenter", "dbus-daemon", "systemctl")
OUTER = """
set -eu
for group in "$@"; do echo $$ > "$group/cgroup.procs"; done
exec unshare --cgroup --mount --propagation private sh -c "$CROFT_TEST_INNER"
"""
INNER = """
set -eu
mkdir -p /run/systemd
mount -t tmpfs -o mode=0755 croft-test /run/systemd
mkdir /run/systemd/system
{cgroups}
dbus-daemon --session --address="unix:path=$XDG_RUNTIME_DIR/bus" --nofork --nopidfile \
  >"$XDG_RUNTIME_DIR/dbus.log" 2>&1 &
exec "$CROFT_TEST_SYSTEMD" --user >"$XDG_RUNTIME_DIR/systemd.log" 2>&1
"""


def _hierarchies() -> list[tuple[str, str]]:
    """(mount point, mount arguments) of the hierarchies a user manager uses: cgroup2 and name=systemd."""
    found = []
    with open("/proc/self/mounts") as handle:
        for line in handle:
            _dev, point, kind, options, *_ = line.split()
            if not point.startswith("/sys/fs/cgroup"):
                continue
            if kind == "cgroup2":
                found.append((point, "-t cgroup2 cgroup2"))
            elif kind == "cgroup" and "name=systemd" in options.split(","):
                found.append((point, "-t cgroup -o none,name=systemd cgroup"))
    return found


def _remounts(hierarchies: list[tuple[str, str]]) -> str:
    """The mounts that show the manager its own group as the root of each hierarchy, and nothing else."""
    if any(point == "/sys/fs/cgroup" for point, _ in hierarchies):  # the unified layout
        return "mount -t cgroup2 cgroup2 /sys/fs/cgroup"
    lines = ["mount -t tmpfs -o mode=0755 croft-cgroups /sys/fs/cgroup"]
    for point, how in hierarchies:
        lines += [f"mkdir -p {point}", f"mount {how} {point}"]
    return "\n".join(lines)


def why_not() -> str | None:
    if os.geteuid() != 0:
        return "a systemd user manager needs a private mount namespace (unshare -m), which needs root"
    missing = [p for p in PROGRAMS if shutil.which(p) is None] + ([] if SYSTEMD else ["systemd"])
    if missing:
        return f"{', '.join(missing)} not installed (scripts/test installs systemd and dbus as root)"
    if not _hierarchies():
        return "this machine mounts neither a cgroup2 nor a name=systemd hierarchy for a user manager"
    return None


@dataclass(frozen=True)
class UserManager:
    pid: int  # systemd --user itself (the namespace's first process)
    runtime: Path
    config: Path
    home: Path

    @property
    def env(self) -> dict[str, str]:
        """What a process of this user needs to reach the manager (and nothing of the suite's own)."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(self.home),
            "USER": "root",
            "LOGNAME": "root",
            "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_CONFIG_HOME": str(self.config),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.runtime}/bus",
        }

    def run(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 200,
    ) -> subprocess.CompletedProcess[str]:
        """``argv`` inside the manager's mount namespace, with its environment plus ``env``."""
        where = [f"--wdns={cwd}"] if cwd is not None else []  # nsenter would start it in /
        return subprocess.run(
            ["nsenter", f"--mount=/proc/{self.pid}/ns/mnt", *where, "--", *argv],
            env=self.env | (env or {}),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(["systemctl", "--user", *args], timeout=60)

    def logs(self) -> str:
        parts = []
        for name in ("systemd.log", "dbus.log"):
            with contextlib.suppress(OSError):
                parts.append(f"{name}: {(self.runtime / name).read_text()}")
        return "\n".join(parts)


def _namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def _inside(namespace: str) -> list[int]:
    """Every live process in the mount namespace (zombies are only waiting for their parent)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _namespace(int(entry)) == namespace:
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    state = handle.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                found.append(int(entry))
    return found


def _init_groups() -> str:
    with open("/proc/1/cgroup") as handle:
        return handle.read()


@contextlib.contextmanager
def user_manager() -> Iterator[UserManager]:
    """A running ``systemd --user`` in a namespace of its own, ended with everything it started."""
    base = Path(tempfile.mkdtemp(prefix="croft-sd-"))
    runtime, config, home = base / "run", base / "config", base / "home"
    for folder in (runtime, config, home):
        folder.mkdir(mode=0o700)
    machine = _init_groups()
    hierarchies = _hierarchies()
    groups = [Path(point) / base.name for point, _ in hierarchies]
    for group in groups:
        group.mkdir()
    manager = UserManager(0, runtime, config, home)
    inner = INNER.format(cgroups=_remounts(hierarchies))
    proc = subprocess.Popen(
        ["sh", "-c", OUTER, "sh", *map(str, groups)],
        env=manager.env | {"CROFT_TEST_SYSTEMD": str(SYSTEMD), "CROFT_TEST_INNER": inner},
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    manager = UserManager(proc.pid, runtime, config, home)
    namespace = None
    try:
        wait_for(
            lambda: proc.poll() is not None or (runtime / "systemd" / "private").exists(),
            lambda: f"systemd --user to start; {manager.logs()}",
            timeout=60,
        )
        assert proc.poll() is None, f"systemd --user exited ({proc.returncode}): {manager.logs()}"
        namespace = _namespace(proc.pid)
        assert namespace is not None and namespace != _namespace(os.getpid()), "no private mount namespace"
        with open(f"/proc/{proc.pid}/cgroup") as handle:
            seen = [
                line
                for line in handle.read().splitlines()
                if line.startswith("0::") or "name=systemd" in line
            ]
        assert seen and all(f"/{base.name}" in line for line in seen), f"the manager left its group: {seen}"

        def settled() -> bool:
            state = manager.systemctl("is-system-running").stdout.strip()
            return state in ("running", "degraded")

        wait_for(settled, lambda: f"the user manager to finish starting up; {manager.logs()}", timeout=60)
        assert _init_groups() == machine, "the user manager moved the machine's processes"
        yield manager
    finally:
        namespace = namespace or _namespace(proc.pid)
        if proc.poll() is None:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                manager.systemctl("exit")  # stops its units in order
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
        if namespace is not None:

            def ended() -> bool:
                for pid in _inside(namespace):  # the bus, and whatever outlived the manager
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                return not _inside(namespace)

            wait_for(ended, "every process of the user manager's namespace to end", timeout=30)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        folders = sorted((w[0] for g in groups for w in os.walk(g)), key=len, reverse=True)
        wait_for(  # an ended process leaves its group once reaped (by init, for the orphans)
            lambda: not any(Path(f, "cgroup.procs").read_text().strip() for f in folders if os.path.isdir(f)),
            lambda: f"the manager's control groups to empty: {folders}",
            timeout=30,
        )
        for folder in folders:  # innermost first
            os.rmdir(folder)
        shutil.rmtree(base, ignore_errors=True)
