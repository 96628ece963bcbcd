"""Desktop notifications: notify-send on Linux, osascript on macOS, plyer elsewhere when it is installed.

The commands are built by pure functions so their quoting is tested without a desktop: notify-send gets
its options ended with ``--`` and a body whose Pango markup is escaped; osascript gets the text as
AppleScript string literals, so nothing in an error message can become AppleScript. A tick started by
cron has no desktop session in its environment, so the D-Bus address is found from the runtime folder.
Every child gets an explicit environment: nothing from ``.env`` can reach it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from croft.core.children import child_env

__all__ = [
    "DESKTOP_TIMEOUT_S",
    "Outcome",
    "Reach",
    "applescript_string",
    "desktop_command",
    "markup_escape",
    "notifier_env",
    "notify_send_body",
    "notify_send_command",
    "osascript_command",
    "reach",
    "show",
]

DESKTOP_TIMEOUT_S = 10.0
OSASCRIPT = "/usr/bin/osascript"
_LINE_BREAKS = str.maketrans({"\u2028": " ", "\u2029": " ", "\x85": " "})


@dataclass(frozen=True)
class Outcome:
    """How a desktop notification went: ``via`` the program used, ``error`` a one-line reason or None."""

    via: str | None
    error: str | None = None


def _flat(text: str) -> str:
    """Line breaks, tabs and other control characters become spaces: a notification is one line."""
    text = text.translate(_LINE_BREAKS)
    return "".join(" " if (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0) else ch for ch in text)


def applescript_string(text: str) -> str:
    """``text`` as an AppleScript string literal: backslashes and quotes escaped, control characters spaced."""
    return '"' + _flat(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def markup_escape(text: str) -> str:
    """The body as notification-spec markup reads it: ``&``, ``<`` and ``>`` as entities, on one line."""
    return _flat(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def notify_send_body(text: str) -> str:
    """The body argument of notify-send: markup escaped, and backslashes doubled because notify-send
    unescapes its body (``\\n`` becomes a line break, ``\\x`` loses its backslash) before sending it."""
    return markup_escape(text).replace("\\", "\\\\")


def osascript_command(title: str, body: str) -> list[str]:
    script = f"display notification {applescript_string(body)} with title {applescript_string(title)}"
    return [OSASCRIPT, "-e", script]


def notify_send_command(title: str, body: str, program: str = "notify-send") -> list[str]:
    return [program, "-a", "croft", "--", _flat(title), notify_send_body(body)]


def desktop_command(platform: str, title: str, body: str, program: str = "notify-send") -> list[str] | None:
    """The command that shows the notification on ``platform`` (``sys.platform``), or None without one."""
    if platform == "darwin":
        return osascript_command(title, body)
    if platform.startswith("linux") or platform.startswith("freebsd"):
        return notify_send_command(title, body, program)
    return None


def notifier_env(environ: Mapping[str, str], platform: str, uid: int | None = None) -> dict[str, str]:
    """The notifier's whole environment (``core.children``'s ``notifier`` kind): PATH, HOME, LANG, and on
    Linux the desktop session's variables.

    Under cron none of the session variables is set; the session bus is then the ``bus`` socket in
    ``XDG_RUNTIME_DIR`` or ``/run/user/<uid>``, which is where every systemd-logind desktop puts it.
    """
    if platform == "darwin":
        env = child_env("notifier", {k: v for k, v in environ.items() if k in ("PATH", "HOME")})
        env["LANG"] = environ.get("LANG") or "en_US.UTF-8"
        return env
    env = child_env("notifier", environ)
    if "DBUS_SESSION_BUS_ADDRESS" not in env:
        runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid() if uid is None else uid}"
        socket = os.path.join(runtime, "bus")
        if os.path.exists(socket):
            env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={socket}"
            env.setdefault("XDG_RUNTIME_DIR", runtime)
    return env


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def show(
    title: str,
    body: str,
    *,
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
    runner: Runner = subprocess.run,
) -> Outcome:
    """Show the notification; never raises. The outcome's ``error`` says what went wrong, in one line."""
    platform = platform or sys.platform
    environ = os.environ if environ is None else environ
    env = notifier_env(environ, platform)
    program = "notify-send"
    if platform != "darwin":
        program = shutil.which("notify-send", path=env["PATH"]) or "notify-send"
    command = desktop_command(platform, title, body, program)
    if command is None:
        return _plyer(title, body, platform)
    name = "osascript" if platform == "darwin" else "notify-send"
    try:
        done = runner(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=DESKTOP_TIMEOUT_S,
        )
    except FileNotFoundError:
        if name == "notify-send":
            return Outcome(name, "desktop: notify-send is not installed (install libnotify-bin or libnotify)")
        return Outcome(name, f"desktop: {OSASCRIPT} is missing")
    except subprocess.TimeoutExpired:
        return Outcome(name, f"desktop: {name} did not finish within {DESKTOP_TIMEOUT_S:g} s")
    except Exception as exc:  # a refusing runner (tests' tripwire) or an OS error: logged, never raised
        return Outcome(name, f"desktop: {name} could not be started: {type(exc).__name__}: {exc}")
    if done.returncode != 0:
        first = next((line.strip() for line in (done.stderr or "").splitlines() if line.strip()), "")
        return Outcome(name, f"desktop: {name} exited {done.returncode}: {first}".rstrip(": "))
    return Outcome(name)


def _plyer(title: str, body: str, platform: str) -> Outcome:
    """plyer where neither notify-send nor osascript applies (Windows): optional, so imported only here."""
    try:
        from plyer import notification  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return Outcome(None, f"desktop notifications are not supported on {platform}")
    try:
        notification.notify(title=title, message=_flat(body), app_name="croft", timeout=10)
    except Exception as exc:
        return Outcome("plyer", f"desktop: plyer failed: {type(exc).__name__}: {exc}")
    return Outcome("plyer")


@dataclass(frozen=True)
class Reach:
    """Whether a scheduled run could show a desktop notification from here (``croft doctor`` asks): ``ok``,
    in ``said`` words; when not, ``cause`` (``no_bus``, ``bus_silent``, ``no_sender``, ``unsupported``)
    and ``fix``, a command that repairs it where croft knows one."""

    ok: bool
    said: str
    cause: str | None = None
    fix: str | None = None


_INSTALLERS = (  # the package manager found first, and its package holding notify-send
    ("apt-get", "apt-get install libnotify-bin"),
    ("dnf", "dnf install libnotify"),
    ("pacman", "pacman -S libnotify"),
    ("zypper", "zypper install libnotify-tools"),
    ("apk", "apk add libnotify"),
)


def reach(
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
    *,
    job: bool = True,
    uid: int | None = None,
) -> Reach:
    """What ``show`` would meet, by its own rules (``notifier_env``, the same program lookup).

    ``job``: as a run started by the OS job sees it. cron and launchd give it none of the session's
    variables, so a ``DBUS_SESSION_BUS_ADDRESS`` of the shell doctor runs in does not count: only the bus
    socket of the user's runtime folder does. A bus is reached when its socket takes a connection."""
    platform = platform or sys.platform
    environ = os.environ if environ is None else environ
    if platform == "darwin":
        if os.access(OSASCRIPT, os.X_OK):
            return Reach(True, f"shown with {OSASCRIPT}")
        return Reach(False, f"{OSASCRIPT} is missing", "no_sender")
    if not (platform.startswith("linux") or platform.startswith("freebsd")):
        if importlib.util.find_spec("plyer") is not None:
            return Reach(True, "shown with plyer")
        return Reach(False, f"desktop notifications are not supported on {platform}", "unsupported")
    seen = {k: v for k, v in environ.items() if not (job and k == "DBUS_SESSION_BUS_ADDRESS")}
    env = notifier_env(seen, platform, uid)
    if not shutil.which("notify-send", path=env["PATH"]):
        return Reach(False, "notify-send is not installed", "no_sender", _install_command())
    address = env.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid() if uid is None else uid}"
        return Reach(
            False, f"no session bus: there is no bus socket {os.path.join(runtime, 'bus')}", "no_bus"
        )
    where, answered = _bus_answers(address)
    if not answered:
        return Reach(False, f"the session bus {where} does not answer", "bus_silent")
    return Reach(True, f"notify-send over the session bus {where}")


def _bus_answers(address: str) -> tuple[str, bool]:
    """(the bus as a person reads it, whether its socket takes a connection); an address croft cannot
    try (tcp:, launchd:) counts as answering."""

    for part in address.split(";"):
        kind, _, rest = part.partition(":")
        keys = dict(item.partition("=")[::2] for item in rest.split(",") if "=" in item)
        target = keys.get("path") or ("\0" + keys["abstract"] if "abstract" in keys else None)
        if kind != "unix" or target is None:
            continue
        shown = keys.get("path") or f"@{keys['abstract']}"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(2.0)
                probe.connect(target)
        except OSError:
            return shown, False
        return shown, True
    return address.split(";")[0].split(",")[0], True


def _install_command() -> str | None:
    sudo = "" if os.geteuid() == 0 else "sudo "
    return next((sudo + how for tool, how in _INSTALLERS if shutil.which(tool)), None)
