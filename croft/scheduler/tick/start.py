"""Starting a scheduled run (``croft run --due``) as a detached process with an explicit environment.

(``schedule.spawn`` starts project ticks for the per-user tick and serve; this starts the runs a tick decides.)

The child is ``<this python> -m croft run --due --run-id ID A B …`` in the project folder, in its own
session (so the tick, a terminal closing or the OS job's cgroup ending does not take it down), with its
output going to the run's log folder and never to the tick's stdout. Its environment is built from a
short list, never copied: secrets a shell exported are not passed on, and the run reads the project's
``.env`` itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from croft.core.identity import ProcessIdentity, boot_id, start_time

__all__ = ["CHILD_ENV_NAMES", "run_env", "start_due_run"]

# What a run needs from the environment it was started in: where things are, the locale, the desktop
# session (notifications) and proxies. Every CROFT_* knob passes too.
CHILD_ENV_NAMES = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
    "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "SYSTEMROOT", "PYTHONPATH",
)  # fmt: skip


def run_env(environ: Mapping[str, str], dotenv_names: frozenset[str] = frozenset()) -> dict[str, str]:
    """The scheduled run's environment: the listed names and CROFT_* knobs, nothing a .env defines."""
    env = {k: environ[k] for k in CHILD_ENV_NAMES if k in environ}
    env.update({k: v for k, v in environ.items() if k.startswith("CROFT_")})
    for name in dotenv_names:
        env.pop(name, None)
    env.setdefault("PATH", os.defpath)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_due_run(
    root: Path, state_dir: Path, run_id: str, assets: list[str], env: dict[str, str]
) -> ProcessIdentity:
    """Start the detached child; returns its identity. OSError when it cannot be started."""
    from croft.scheduler.user.launch import detach

    folder = Path(state_dir) / "logs" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "process.log"
    argv = [sys.executable, "-m", "croft", "run", "--due", "--json", "--run-id", run_id, *assets]
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        child = detach(argv, root, fd, env)
    finally:
        os.close(fd)
    # The tick exits soon and init adopts the child; holding the handle keeps Python from warning about it.
    _CHILDREN.append(child)
    return ProcessIdentity(pid=child.pid, start=start_time(child.pid), boot=boot_id())


_CHILDREN: list[object] = []
