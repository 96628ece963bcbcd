"""Every process croft starts gets its environment from the one table below, built from scratch.

A child never inherits croft's environment whole: the shell that ran ``croft`` may hold secrets (a
project's ``.env`` values exported by hand, tokens of other tools), and the OS job's environment is
bare. So each kind of child gets exactly the names the table lists for it:

- ``croft``: a croft process croft starts, a project tick (from ``croft tick --all`` or ``croft serve``)
  or a scheduled run (from the project tick). It gets where things are, the locale, the desktop
  session (its notifications), proxies and certificates (its HTTP), and every ``CROFT_*`` knob, so a
  tick and the run it starts see what the command that started them saw, however it was started;
- ``program``: an OS program the scheduler drives (crontab, launchctl, systemctl, loginctl): enough to
  find the user's session, in the C locale so its words can be read;
- ``notifier``: notify-send or osascript: the display and the session bus;
- ``probe``: the interpreter check before an OS job is installed, as bare as cron's environment, so
  an interpreter that finds croft only through the shell's PYTHONPATH is caught before it fails;
- ``job``: what the OS job itself carries (crontab line, plist, unit): only ``CROFT_HOME``.

``detach`` starts a child that outlives the process starting it (its own session, no stdin).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import IO, Literal

    Kind = Literal["croft", "program", "notifier", "probe", "job"]

__all__ = ["BASE_PATH", "ENV_TABLE", "child_env", "croft_argv", "croft_env", "detach"]

BASE_PATH = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
_CROFT = frozenset({"croft"})
_SESSION = frozenset({"croft", "program", "notifier"})

# name -> the kinds of child that get it. A CROFT_* name not listed here goes to "croft" children too.
ENV_TABLE: dict[str, frozenset[str]] = {
    "PATH": frozenset({"croft", "program", "notifier"}),
    "HOME": frozenset({"croft", "program", "notifier"}),
    "USER": frozenset({"croft", "program"}),
    "LOGNAME": frozenset({"croft", "program"}),
    "SHELL": _CROFT,
    "LANG": frozenset({"croft", "notifier"}),
    "LC_ALL": _CROFT,
    "LC_CTYPE": _CROFT,
    "TZ": _CROFT,
    "TMPDIR": _CROFT,
    "XDG_RUNTIME_DIR": _SESSION,
    "DBUS_SESSION_BUS_ADDRESS": _SESSION,
    "DISPLAY": frozenset({"croft", "notifier"}),
    "WAYLAND_DISPLAY": frozenset({"croft", "notifier"}),
    "HTTP_PROXY": _CROFT,
    "HTTPS_PROXY": _CROFT,
    "NO_PROXY": _CROFT,
    "ALL_PROXY": _CROFT,
    "http_proxy": _CROFT,
    "https_proxy": _CROFT,
    "no_proxy": _CROFT,
    "all_proxy": _CROFT,
    "SSL_CERT_FILE": _CROFT,
    "SSL_CERT_DIR": _CROFT,
    "REQUESTS_CA_BUNDLE": _CROFT,
    "SYSTEMROOT": _CROFT,
    "PYTHONPATH": _CROFT,
    "CROFT_HOME": frozenset({"croft", "job"}),
}
# What a kind gets when the environment it is built from lacks the name.
_DEFAULTS: dict[str, dict[str, str]] = {
    "croft": {"LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"},
    "program": {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C"},
    "notifier": {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    "probe": {"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
    "job": {},
}


def child_env(kind: Kind, environ: Mapping[str, str] | None = None, **fixed: str) -> dict[str, str]:
    """The whole environment of a ``kind`` child, from ``environ`` (default: this process's); ``fixed``
    names are set as given. Empty values are left out."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if v and kind in ENV_TABLE.get(k, _croft_knob(k))}
    for name, value in _DEFAULTS[kind].items():
        env.setdefault(name, value)
    if kind in ("program", "notifier", "croft") and "HOME" not in env:
        env["HOME"] = os.path.expanduser("~")
    env.update(fixed)
    return env


def _croft_knob(name: str) -> frozenset[str]:
    return _CROFT if name.startswith("CROFT_") else frozenset()


def croft_env(
    environ: Mapping[str, str] | None = None, *, croft_home: str | None = None, drop: Iterable[str] = ()
) -> dict[str, str]:
    """A croft child's environment: PATH starts with this interpreter's folder (cron and launchd give a
    bare PATH) and ends with the usual system folders; ``croft_home`` pins CROFT_HOME; ``drop`` removes
    names (a project's ``.env`` names, which its run reads itself)."""
    env = child_env("croft", environ)
    path: list[str] = []
    for part in [os.path.dirname(sys.executable), *env.get("PATH", "").split(os.pathsep), *BASE_PATH]:
        if part and part not in path:
            path.append(part)
    env["PATH"] = os.pathsep.join(path)
    if croft_home is not None:
        env["CROFT_HOME"] = croft_home
    for name in drop:
        env.pop(name, None)
    return env


def croft_argv(*args: str) -> list[str]:
    """The command of a croft child: this interpreter with ``-P``, so ``-m croft`` in a project folder does
    not put that folder first on ``sys.path`` (in a shared project the group may write it: a ``json.py``
    there would be imported in place of the standard library's). ``-I`` would also drop PYTHONPATH and the
    user's site-packages, which a croft installed with ``pip install --user`` needs."""
    return [sys.executable, "-P", "-m", "croft", *args]


def detach(
    argv: list[str],
    cwd: str | os.PathLike[str],
    out: IO[bytes] | int,
    env: dict[str, str],
    *,
    talk: bool = False,
    keep: tuple[int, ...] = (),
    stdin: int | None = None,
) -> subprocess.Popen[bytes]:
    """A child in its own session (the OS job or the tick ending does not take it along), no stdin, its
    stdout and stderr to ``out``, and exactly ``env``. Raises OSError when it cannot start.

    ``talk``: the starter speaks to it (its stdin and stdout are pipes; only stderr goes to ``out``).
    ``keep``: descriptors it inherits (a scheduled run's slots); ``stdin``: a descriptor in place of none."""

    given = subprocess.PIPE if talk else subprocess.DEVNULL
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=given if stdin is None else stdin,
        stdout=subprocess.PIPE if talk else out,
        stderr=out if talk else subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
        pass_fds=keep,
    )
