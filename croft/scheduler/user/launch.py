"""Starting one project's tick (``<interpreter> -m croft tick`` in its folder), for the per-user tick and serve.

The child is detached (its own session, so the OS job ending does not take it along), its output is
appended to the tick log, and its environment is built from scratch: only what a tick needs, never the
variables of whoever started the job (which may hold secrets).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

__all__ = ["TickLog", "child_env", "detach", "spawn_tick"]

ROTATE_BYTES = 5 * 1024 * 1024
_PASSED = (
    "TMPDIR",
    "USER",
    "LOGNAME",
    "TZ",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "CROFT_JOB_LABEL",
    "CROFT_NOW",
    "CROFT_NOTIFY_DRY",
    "CROFT_RETRY_DELAYS",
    "CROFT_DEBUG",
    "CROFT_MAX_SCHEDULED_RUNS",
)
_BASE_PATH = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")


def child_env(croft_home: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """HOME, PATH (the interpreter's folder first), LANG, CROFT_HOME and a short list of harmless knobs."""
    env_in = dict(os.environ if environ is None else environ)
    path: list[str] = []
    for part in [os.path.dirname(sys.executable), *env_in.get("PATH", "").split(os.pathsep), *_BASE_PATH]:
        if part and part not in path:
            path.append(part)
    out = {
        "HOME": env_in.get("HOME") or os.path.expanduser("~"),
        "PATH": os.pathsep.join(path),
        "LANG": env_in.get("LANG") or "C.UTF-8",
        "CROFT_HOME": str(croft_home),
    }
    out.update({k: env_in[k] for k in _PASSED if env_in.get(k)})
    return out


class TickLog:
    """The per-user tick log: rotated to ``tick.log.1`` past 5 MB, lines ``<ISO now> <message>``, 0600."""

    def __init__(self, path: Path):
        self.path = path

    def rotate(self) -> None:
        try:
            if self.path.stat().st_size > ROTATE_BYTES:
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        except FileNotFoundError:
            pass

    def open(self) -> IO[bytes]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return os.fdopen(fd, "ab", buffering=0)

    def write(self, stamp: str, message: str) -> None:
        with self.open() as out:
            out.write(f"{stamp} {message}\n".encode())


def spawn_tick(root: str, log: IO[bytes], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``croft tick`` in ``root``; returns at once. Raises OSError when it cannot start."""
    return detach([sys.executable, "-m", "croft", "tick"], root, log, env)


def detach(
    argv: list[str], cwd: str | Path, out: IO[bytes] | int, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """A child in its own session (the OS job or tick ending does not take it along), no stdin, its stdout
    and stderr to ``out``, and exactly ``env``. Raises OSError when it cannot start."""
    import subprocess  # only when something starts: an idle minute does not pay for it

    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
    )
