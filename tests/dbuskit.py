"""A REAL D-Bus session bus for tests: ``dbus-daemon --session`` with its socket at ``<runtime>/bus`` and a
stand-in notification daemon (``dbuslistener.py``) owning org.freedesktop.Notifications on it.

In CI (``CI=true``) a missing part fails the test; elsewhere it skips with the reason.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SYSTEM_PYTHON = "/usr/bin/python3"
LISTENER = Path(__file__).resolve().parent / "dbuslistener.py"


def _missing() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"notify-send is the Linux notifier; this is {sys.platform}"
    for program in ("dbus-daemon", "notify-send"):
        if not shutil.which(program):
            return f"{program} is not installed (apt-get install dbus libnotify-bin)"
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import dbus, gi"], capture_output=True, check=False)
    if probe.returncode != 0:
        return "the listener needs the system python with python3-dbus and python3-gi"
    return None


def _line(proc: subprocess.Popen[str], what: str, seconds: float = 15) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    assert ready, f"{what} said nothing within {seconds} s"
    return proc.stdout.readline().strip()


@contextlib.contextmanager
def running_bus(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the runtime folder holding the bus socket, the file the listener writes each Notify call to), for
    the ``session_bus`` fixture (tests/conftest.py)."""
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the D-Bus test: {reason}")
        pytest.skip(reason)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    received = tmp_path / "received.ndjson"
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address", f"--address=unix:path={runtime / 'bus'}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    listener = None
    try:
        address = _line(daemon, "dbus-daemon")
        listener = subprocess.Popen(
            [SYSTEM_PYTHON, str(LISTENER), str(received)],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DBUS_SESSION_BUS_ADDRESS": address},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert _line(listener, "the notification listener").startswith("ready")
        yield runtime, received
    finally:
        for proc in (listener, daemon):
            if proc is not None:
                proc.terminate()
                proc.communicate(timeout=10)  # reaps it and closes its pipes
