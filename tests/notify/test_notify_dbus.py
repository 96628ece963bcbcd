"""A failed scheduled run shows a desktop notification through notify-send on a REAL D-Bus session bus.

The test starts its own ``dbus-daemon --session`` with its socket at ``<runtime>/bus`` and a stand-in
notification daemon (tests/dbuslistener.py) owning org.freedesktop.Notifications (``dbuskit``). croft is given no
session variables except XDG_RUNTIME_DIR, as under cron, so it must find the bus itself.
"""

from __future__ import annotations

import json

import pytest

from croft.engine.runner import RunOptions, run_assets
from croft.project.config import load_project

pytestmark = pytest.mark.processes


SECRET = "sk_live_abcdef123456"


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
