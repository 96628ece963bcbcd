"""A failed scheduled run shows a desktop notification through notify-send on a REAL D-Bus session bus.

The test starts its own ``dbus-daemon --session`` with its socket at ``<runtime>/bus`` and a stand-in
notification daemon (tests/dbuslistener.py) owning org.freedesktop.Notifications. croft is given no
session variables except XDG_RUNTIME_DIR, as under cron, so it must find the bus itself.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from croft.engine.runner import RunOptions, run_assets
from croft.project.config import load_project

pytestmark = pytest.mark.processes

SECRET = "sk_live_abcdef123456"
SYSTEM_PYTHON = "/usr/bin/python3"
LISTENER = Path(__file__).resolve().parents[1] / "dbuslistener.py"


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


@pytest.fixture
def session_bus(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the runtime folder holding the bus socket, the file the listener writes each Notify call to)."""
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


def test_a_failed_scheduled_run_notifies_the_desktop_over_dbus(session_bus, make_project, monkeypatch):
    runtime, received = session_bus
    for name in ("CROFT_NOTIFY_DRY", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    root = make_project(
        {
            "assets/orders.py": """
                from croft import ingest


                @ingest(key="id", secrets=["SHOP_KEY"])
                def rows(ctx):
                    raise ValueError('bad <row> & "quote" \\\\ ünï key=' + ctx.secret("SHOP_KEY"))
                """,
            ".env": f"SHOP_KEY={SECRET}\n",
        }
    )
    result = run_assets(load_project(root), RunOptions(trigger="schedule", human=False))
    assert result.envelope()["data"]["steps"][0]["status"] == "failed"
    [note] = [json.loads(line) for line in received.read_text().splitlines()]
    assert note["app"] == "croft" and note["summary"] == "croft: proj"
    body = note["body"]
    assert body.startswith("orders failed in a scheduled run: ASSET_CODE_ERROR: ")
    assert 'bad &lt;row&gt; &amp; "quote" \\ ünï key=[redacted:SHOP_KEY]' in body
    assert body.endswith("See it with: croft logs orders --failed")
    assert SECRET not in json.dumps(note)
    [logged] = (root / ".croft/logs/notify.log").read_text().splitlines()  # no miss: one delivery
    assert logged.split(" ", 2)[2] == "sent desktop (notify-send): a failed run"

    run_assets(load_project(root), RunOptions(trigger="schedule", human=False))  # the streak goes on: quiet
    run_assets(load_project(root), RunOptions(selectors=["orders"]))  # by hand: never notified
    assert len(received.read_text().splitlines()) == 1
