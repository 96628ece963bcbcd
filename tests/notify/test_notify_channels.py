"""notify.urls through Apprise's own sending path to a local receiver (``json://127.0.0.1:<port>/...``),
redacted; run pings in healthchecks.io's shape (start, success, fail with its log tail) at a local
server; and, without the extra, ``validate`` names the missing package."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from schedulekit import croft_json, env_at, schedule_on, tick

from croft.engine.runner import RunOptions, run_assets
from croft.project.config import load_project

pytestmark = pytest.mark.processes

SECRET = "sk_live_channel_0123456789"

FAILING = """
import os

from croft import ingest


@ingest(schedule="every hour", key="id", secrets=["SHOP_KEY"]{extra})
def rows(ctx):
    if os.path.exists(os.path.join(os.path.dirname(__file__), "..", "BROKEN")):
        print("calling the API with", ctx.secret("SHOP_KEY"))
        raise RuntimeError("the source refused key " + ctx.secret("SHOP_KEY"))
    yield {{"id": 1}}
"""


def test_apprise_delivers_through_its_own_json_target_redacted(make_project, server, monkeypatch):
    pytest.importorskip("apprise", reason="the apprise extra is part of the dev extras scripts/test installs")
    server.route("POST", "/apprise", server.reply(200))
    port = server.url("/").split(":")[2].split("/")[0]
    root = make_project(
        {
            "assets/orders.py": FAILING.format(extra=""),
            ".env": f"SHOP_KEY={SECRET}\nCHANNEL=json://127.0.0.1:{port}/apprise\n",
        },
        timezone="UTC",
        notify={"desktop": False, "urls": ["$CHANNEL"]},
    )
    (root / "BROKEN").write_text("")
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T09:00:00Z")
    run_assets(load_project(root), RunOptions(trigger="schedule", human=False))
    [sent] = server.requests_to("/apprise")
    body = sent.json()  # Apprise's JSON shape: version, title, message, type
    assert body["title"] == "croft: proj"
    assert body["message"].startswith("orders failed in a scheduled run: ASSET_CODE_ERROR")
    assert "[redacted:SHOP_KEY]" in body["message"] and SECRET not in sent.body.decode()
    assert body["type"] in ("info", "failure", "warning")
    log = root / ".croft/logs/notify.log"
    assert not log.exists() or "apprise" not in log.read_text()


def test_without_apprise_validate_names_the_missing_package(make_project, tmp_path):
    root = make_project({}, timezone="UTC", notify={"urls": ["ntfy://ntfy.sh/my-topic"]})
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import importlib.abc, sys
            class _NoApprise(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path=None, target=None):
                    if name == "apprise" or name.startswith("apprise."):
                        raise ModuleNotFoundError("No module named 'apprise'")
                    return None
            sys.meta_path.insert(0, _NoApprise())
            """
        )
    )
    env = {**env_at("2026-06-01T09:00:00Z"), "PYTHONPATH": str(hide)}
    out = subprocess.run(
        [sys.executable, "-m", "croft", "validate", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    envelope = json.loads(out.stdout)
    [missing] = [p for p in envelope["problems"] if p["code"] == "APPRISE_MISSING"]
    assert (
        "apprise package" in missing["message"]
        and missing["fix"]["command"] == "pip install 'croft[apprise]'"
    )
    assert missing["severity"] == "warning" and out.returncode == 0
    pytest.importorskip("apprise", reason="the apprise extra is part of the dev extras scripts/test installs")
    _code, plain = croft_json(root, "2026-06-01T09:00:00Z", "validate")  # installed here: nothing to say
    assert [p for p in plain["problems"] if p["code"] == "APPRISE_MISSING"] == []


def test_run_pings_arrive_in_healthchecks_shape(make_project, server):
    for path in (
        "/hc/proj",
        "/hc/proj/start",
        "/hc/proj/fail",
        "/hc/orders",
        "/hc/orders/start",
        "/hc/orders/fail",
    ):
        server.route("GET", path, server.reply(200, "OK"))
        server.route("POST", path, server.reply(200, "OK"))
    root = make_project(
        {
            "assets/orders.py": FAILING.format(extra=', run_ping="HC_ORDERS"'),
            ".env": f"SHOP_KEY={SECRET}\nHC_ORDERS={server.url('/hc/orders')}\n",
        },
        timezone="UTC",
        notify={"desktop": False, "runPing": server.url("/hc/proj")},
    )
    code, ran = croft_json(root, "2026-06-01T08:30:00Z", "run")  # by hand: approved, and not pinged
    assert code == 0, ran
    assert server.requests == []
    schedule_on(root, "2026-06-01T08:31:00Z")
    tick(root, "2026-06-01T09:00:30Z")  # a scheduled success
    seen = [(r.method, r.path) for p in ("/hc/proj", "/hc/orders") for r in server.requests_to(p)]
    starts = [
        (r.method, r.path) for p in ("/hc/proj/start", "/hc/orders/start") for r in server.requests_to(p)
    ]
    assert sorted(seen) == [("GET", "/hc/orders"), ("GET", "/hc/proj")]
    assert sorted(starts) == [("GET", "/hc/orders/start"), ("GET", "/hc/proj/start")]

    (root / "BROKEN").write_text("")
    tick(root, "2026-06-01T10:00:30Z")  # a scheduled failure: /fail with the redacted log tail
    for base in ("/hc/proj", "/hc/orders"):
        [fail] = server.requests_to(f"{base}/fail")
        assert fail.method == "POST"
        text = fail.body.decode()
        assert (
            "orders failed: ASSET_CODE_ERROR" in text and "the source refused key [redacted:SHOP_KEY]" in text
        )
        assert "calling the API with [redacted:SHOP_KEY]" in text  # the log's tail
        assert SECRET not in text
        assert len(server.requests_to(f"{base}/start")) == 2
