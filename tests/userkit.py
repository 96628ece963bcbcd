"""Throwaway unix users for the tests that need a second one (a crontab of its own, files of its own).

``throwaway_user()`` makes one with ``useradd`` (its own group and home) and removes it afterwards with
everything it left: its processes, its crontab, its home. Only root can, so ``why_not_root()`` says why a
test skips elsewhere, and ``cannot()`` fails instead under CI (CI=true), where such tests must run.
``python_for`` finds an interpreter the user may run that imports the croft under test.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from waiting import wait_for

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
PROGRAMS = ("useradd", "usermod", "userdel")


def why_not_root(programs: tuple[str, ...] = ()) -> str | None:
    """Why this process cannot make a throwaway user (and run ``programs``), or None."""
    if os.geteuid() != 0:
        return "it makes a throwaway unix user of its own (useradd), which needs root"
    missing = [p for p in (*PROGRAMS, *programs) if shutil.which(p) is None]
    if missing:
        return f"{', '.join(missing)} not installed"
    return None


def cannot(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class User:
    """The throwaway user: runs commands as itself, with its own minimal environment."""

    name: str
    uid: int
    gid: int
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        base = {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "PATH": SYSTEM_PATH}
        return base | {"LANG": os.environ.get("LANG", "C.UTF-8")} | extra

    def run(
        self,
        argv: list[str],
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 200,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=cwd or self.home,
            env=env or self.env(),
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def give(self, path: Path) -> None:
        """Make ``path`` and everything under it this user's."""
        for folder, dirs, files in os.walk(path):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.chown(name, self.uid, self.gid, follow_symlinks=False)

    def processes(self) -> list[int]:
        """The pids of this user's live processes (a zombie is only waiting for its parent to read it)."""
        mine = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = dict(
                        line.split(":", 1)
                        for line in (entry / "status").read_text().splitlines()
                        if ":" in line
                    )
                except OSError:
                    continue  # ended meanwhile
                if str(self.uid) in fields["Uid"].split() and not fields["State"].strip().startswith("Z"):
                    mine.append(int(entry.name))
        return mine


def add_user(prefix: str = "croft-e2e") -> User:
    name = f"{prefix}-{os.getpid()}-{secrets.token_hex(2)}"
    subprocess.run(
        ["useradd", "--create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
        text=True,
    )
    entry = pwd.getpwnam(name)
    return User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def remove_user(user: User) -> None:
    """The user gone with all it left: no job cron could start, no process, no crontab, no home."""
    subprocess.run(["usermod", "--expiredate", "1", user.name], capture_output=True, check=False)
    if shutil.which("crontab"):
        subprocess.run(["crontab", "-u", user.name, "-r"], capture_output=True, check=False)

    def ended() -> bool:
        for pid in user.processes():  # a tick or scheduled run cron started as this user
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                os.kill(pid, signal.SIGKILL)
        return not user.processes()

    wait_for(ended, f"the processes of {user.name} to end", timeout=30)
    # --force: a zombie of the user's, not yet read by its parent, would otherwise keep the user
    gone = subprocess.run(["userdel", "--force", "--remove", user.name], capture_output=True, text=True)
    assert gone.returncode == 0, f"userdel {user.name}: {gone.stderr}"


@contextlib.contextmanager
def throwaway_user(prefix: str = "croft-e2e") -> Iterator[User]:
    """A fresh unix user for the block, removed afterwards with everything it left (even on failure)."""
    user = add_user(prefix)
    try:
        yield user
    finally:
        remove_user(user)


def python_for(user: User, where: Path) -> Path:
    """An interpreter path with a space in it that ``user`` may run and that imports the croft under test."""
    link = where / "venv link"
    try:
        inside = Path(sys.executable).relative_to(sys.prefix)
    except ValueError:
        inside = None
    if inside is not None:
        link.symlink_to(sys.prefix)  # the suite's own interpreter, which still finds its venv through it
        try:
            usable = user.run([str(link / inside), "-c", "import croft"]).returncode == 0
        except PermissionError:  # the interpreter itself is out of the user's reach
            usable = False
        if usable:
            return link / inside
        link.unlink()
    # The suite's interpreter is out of the user's reach (a pyenv under /root, say): a venv of the user's
    # own on the system's python of the same version, with the suite's packages on its path.
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = shutil.which(version, path=SYSTEM_PATH)
    if base is None:
        cannot(f"the user cannot run {sys.executable}, and there is no {version} in {SYSTEM_PATH}")
    made = user.run([str(base), "-m", "venv", "--without-pip", str(link)])
    if made.returncode != 0:
        cannot(f"{base} -m venv failed for the throwaway user: {made.stderr.strip()}")
    python = link / "bin" / "python"
    asked = user.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    assert asked.returncode == 0, asked.stderr
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(asked.stdout.strip()) / "croft-under-test.pth").write_text(
        "".join(f"import site; site.addsitedir({folder!r})\n" for folder in ours)
    )
    imports = user.run([str(python), "-c", "import croft, crontab, httpx"])
    if imports.returncode != 0:
        cannot(f"the throwaway user cannot import croft from {', '.join(ours)}: {imports.stderr.strip()}")
    return python
