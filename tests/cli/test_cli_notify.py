"""``croft notify test``: a test message to every configured channel through real processes, to a real
local HTTP server (the webhook, the ping, each run ping, and Apprise's own ``json://`` target), and a
line per channel of how it went; a failing receiver is named, by host only, with exit 1."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from schedulekit import croft_json, env_at

pytestmark = pytest.mark.processes

NOW = "2026-06-01T09:00:00Z"
SIGNING = "whsec_test_0123456789abcdef"
PINGED = """
from croft import ingest


@ingest(schedule="every hour", key="id", run_ping="HC_ORDERS")
def rows(ctx):
    yield {"id": 1}
"""


def _port(server: Any) -> str:
    return server.url("/").split(":")[2].split("/")[0]


def _plain(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "croft", "notify", "test", *args],
        cwd=root,
        env=env_at(NOW),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _sent(root: Path) -> list[dict[str, Any]]:
    path = root / ".croft" / "logs" / "notifications.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_every_channel_gets_a_test_message_and_each_answer_is_shown(make_project, server, tmp_path):
    pytest.importorskip("apprise", reason="the apprise extra is part of the dev extras scripts/test installs")
    for path in ("/hook/t0ken", "/apprise", "/hc/proj/log", "/hc/orders/log"):
        server.route("POST", path, server.reply(200, "OK"))
    server.route("GET", "/ping/uuid-1", server.reply(200, "OK"))
    port = _port(server)
    root = make_project(
        {
            "assets/orders.py": PINGED,
            ".env": (
                f"HOOK_SECRET={SIGNING}\nCHANNEL=json://127.0.0.1:{port}/apprise\n"
                f"HC_ORDERS={server.url('/hc/orders')}\n"
            ),
        },
        timezone="UTC",
        notify={
            "webhook": server.url("/hook/t0ken"),
            "secret": "HOOK_SECRET",
            "urls": ["$CHANNEL"],
            "ping": server.url("/ping/uuid-1"),
            "runPing": server.url("/hc/proj"),
        },
    )
    code, envelope = croft_json(root, NOW, "notify", "test")
    assert code == 0 and envelope["ok"] and envelope["problems"] == [], envelope
    host = f"127.0.0.1:{port}"
    assert envelope["data"] == {
        "project": "proj",
        "channels": [
            {
                "channel": "desktop",
                "target": "notifications.ndjson (CROFT_NOTIFY_DRY)",
                "ok": True,
                "error": None,
            },
            {"channel": "webhook", "target": host, "ok": True, "error": None},
            {"channel": "apprise", "target": "$CHANNEL (notify.urls[0])", "ok": True, "error": None},
            {"channel": "ping", "target": host, "ok": True, "error": None},
            {"channel": "runPing", "target": host, "ok": True, "error": None},
            {"channel": "runPing", "target": f"{host} (orders)", "ok": True, "error": None},
        ],
    }
    # each receiver got the test message, in its own shape
    [hook] = server.requests_to("/hook/t0ken")
    expected = "sha256=" + hmac.new(SIGNING.encode(), hook.body, hashlib.sha256).hexdigest()
    assert hook.headers["x-croft-signature"] == expected
    assert (
        hook.json()["event"] == "test" and hook.json()["ok"] is True and hook.json()["data"]["runId"] is None
    )
    [apprise] = server.requests_to("/apprise")
    assert apprise.json()["title"] == "croft: proj" and "test message" in apprise.json()["message"]
    assert [r.method for r in server.requests_to("/ping/uuid-1")] == ["GET"]
    # a run ping's test is healthchecks' /log: no run marked started, succeeded or failed
    for path in ("/hc/proj", "/hc/orders"):
        [logged] = server.requests_to(f"{path}/log")
        assert logged.method == "POST" and b"test message" in logged.body
        assert server.requests_to(path) == [] and server.requests_to(f"{path}/start") == []
    [desktop] = [e for e in _sent(root) if e["kind"] == "desktop"]
    assert desktop["event"] == "test" and desktop["title"] == "croft: proj"

    plain = _plain(root)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert len(lines) == 6 and all(line.startswith("✔ ") for line in lines), plain.stdout
    assert lines[1].split() == ["✔", "webhook", host]


def test_a_failing_channel_is_named_by_host_only_and_exits_1(make_project, server):
    server.route("POST", "/hook/t0ken", server.reply(404, "no such hook"))
    server.route("GET", "/ping/uuid-1", server.reply(500, "down"))
    root = make_project(
        {".env": "HC_PROJ=http://127.0.0.1:9/hc/secret-uuid\n"},
        timezone="UTC",
        notify={
            "desktop": False,
            "webhook": server.url("/hook/t0ken?token=s3cret"),
            "ping": server.url("/ping/uuid-1"),
            "runPing": "HC_PROJ",
            "urls": ["$NOT_IN_ENV"],
        },
    )
    code, envelope = croft_json(root, NOW, "notify", "test", CROFT_NOTIFY_TIMEOUT_MS="2000")
    assert code == 1 and envelope["ok"] is False
    channels = {c["channel"]: c for c in envelope["data"]["channels"]}
    assert set(channels) == {"webhook", "ping", "runPing", "apprise"}
    assert not any(c["ok"] for c in channels.values())
    assert channels["webhook"]["error"] == "HTTP 404 (not retried)"
    assert channels["ping"]["error"] == "HTTP 500"
    assert (
        channels["runPing"]["target"] == "127.0.0.1:9"
        and "Connection refused" in channels["runPing"]["error"]
    )
    assert "NOT_IN_ENV is not defined in .env" in channels["apprise"]["error"]
    [failed] = envelope["problems"]
    assert failed["code"] == "NOTIFY_FAILED" and failed["severity"] == "error"
    assert failed["message"].startswith("4 of 4 notification channel(s) failed the test: webhook 127.0.0.1:")
    assert "croft notify test" in failed["hint"]
    text = json.dumps(envelope)
    assert "t0ken" not in text and "s3cret" not in text and "secret-uuid" not in text and "uuid-1" not in text

    plain = _plain(root)
    assert plain.returncode == 1
    assert [line[:1] for line in plain.stdout.splitlines()] == ["✖"] * 4
    assert "error: NOTIFY_FAILED" in plain.stderr and "more: croft docs NOTIFY_FAILED" in plain.stderr


def test_with_no_channel_at_all_it_says_nobody_would_be_told(make_project):
    root = make_project({}, timezone="UTC", notify={"desktop": False})
    code, envelope = croft_json(root, NOW, "notify", "test")
    assert code == 1 and envelope["data"]["channels"] == []
    [none] = envelope["problems"]
    assert none["code"] == "NOTIFY_FAILED" and "configures no notification channel" in none["message"]


def test_outside_a_project_it_refuses_with_not_a_project(tmp_path):
    code, envelope = croft_json(tmp_path, NOW, "notify", "test")
    assert code == 2 and envelope["problems"][0]["code"] == "NOT_A_PROJECT"
