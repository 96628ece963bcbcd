"""The webhook and the ping against a real local HTTP server: payload, signature (by the documented recipe),
redaction, retries, timeouts, and that nothing ever raises."""

from __future__ import annotations

import json
import re
import socket
import threading
from pathlib import Path

import pytest

from croft.core.paths import data_path
from croft.notify.message import Failed
from croft.notify.send import notify_failed_start, notify_scheduled_failure, ping_after_tick
from croft.project.config import load_project

SECRET = "sk_live_abcdef123456"
SIGNING_KEY = "whsec_0123456789abcdef"
ERROR = {
    "code": "HTTP_ERROR",
    "severity": "error",
    "message": f"GET http://api.example/orders?key={SECRET} returned 400 Bad Request",
    "hint": "compare the query with the API's documentation",
    "details": {"body": f'{{"error": "invalid key {SECRET}"}}', "status": 400},
}


@pytest.fixture
def waits(monkeypatch):
    recorded: list[float] = []
    monkeypatch.setattr("croft.core.clock.pause", recorded.append)
    return recorded


def project_with(make_project, url: str | None, root: Path | None = None, **notify):
    root = make_project(
        {".env": f"SHOP_KEY={SECRET}\nHOOK_SECRET={SIGNING_KEY}\n"},
        root=root,
        notify={"desktop": False, "webhook": url, **notify},
    )
    return load_project(root)


def _lines(project) -> list[str]:
    path = project.config.state_dir / "logs" / "notify.log"
    return path.read_text().splitlines() if path.exists() else []


def notify_log(project) -> list[str]:
    """The misses of notify.log (every line but the deliveries)."""
    return [
        line
        for line in _lines(project)
        if line.split(" ", 2)[2:3] and not line.split(" ", 2)[2].startswith("sent ")
    ]


def deliveries(project) -> list[str]:
    """What notify.log says went out: ``<channel>: <what>`` per delivery."""
    return [
        line.split(" ", 2)[2][len("sent ") :]
        for line in _lines(project)
        if line.split(" ", 2)[2].startswith("sent ")
    ]


def documented_verify():
    """The receiver's recipe, exactly as docs/notifications.md shows it."""
    guide = data_path("docs", "notifications.md").read_text()
    section = guide.split("### Verifying the signature", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]  # type: ignore[index]
    assert len(code.strip().splitlines()) == 5, code
    namespace: dict = {}
    exec(code, namespace)
    return namespace["verify"]


def test_the_failure_envelope_is_posted_signed_and_redacted(make_project, server):
    server.route("POST", "/hook", server.reply(204))
    project = project_with(make_project, server.url("/hook"), secret="HOOK_SECRET")
    notify_scheduled_failure(project, "r_1102_0900_abcd", [Failed("orders", ERROR)])
    [request] = server.requests_to("/hook")
    assert SECRET.encode() not in request.body and b"[redacted:SHOP_KEY]" in request.body
    payload = request.json()
    assert list(payload) == ["project", "text", "event", "streak", "data", "problems", "next", "exit", "ok"]
    assert payload["project"] == "proj" and payload["event"] == "failed" and payload["streak"] == 1
    assert payload["text"].startswith("croft: proj — orders failed in a scheduled run: HTTP_ERROR: GET")
    assert payload["data"] == {"runId": "r_1102_0900_abcd", "status": "failed", "steps": []}
    assert payload["problems"][0]["details"]["body"] == '{"error": "invalid key [redacted:SHOP_KEY]"}'
    assert (payload["exit"], payload["ok"]) == (1, False)
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("croft/")
    verify = documented_verify()
    header = request.headers["x-croft-signature"]
    assert verify(SIGNING_KEY, request.body, header)
    assert not verify(SIGNING_KEY, request.body + b" ", header)
    assert not verify("another key", request.body, header)
    assert notify_log(project) == []
    assert deliveries(project) == [f"webhook {server.url('/hook').split('/')[2]} (HTTP 204): a failed run"]


def test_a_literal_secret_signs_and_an_undefined_variable_name_is_refused(make_project, server, tmp_path):
    server.route("POST", "/hook", server.reply(200))
    project = project_with(make_project, server.url("/hook"), secret="literal-key-42")
    notify_scheduled_failure(project, "r_1", [Failed("orders", ERROR)])
    request = server.requests_to("/hook")[0]
    assert documented_verify()("literal-key-42", request.body, request.headers["x-croft-signature"])

    other = project_with(make_project, server.url("/hook"), tmp_path / "other", secret="MISSING_SECRET")
    notify_scheduled_failure(other, "r_2", [Failed("orders", ERROR)])
    assert len(server.requests_to("/hook")) == 1  # nothing sent unsigned
    assert "notify.secret names MISSING_SECRET, which .env does not define" in notify_log(other)[-1]


def test_500_then_200_is_retried_and_delivered(make_project, server, waits):
    server.route("POST", "/hook", server.sequence([(500, {}, "boom"), (200, {}, "")]))
    project = project_with(make_project, server.url("/hook"))
    notify_scheduled_failure(project, "r_1", [Failed("orders", ERROR)])
    assert len(server.requests_to("/hook")) == 2
    assert waits == [1.0]
    assert notify_log(project) == [] and deliveries(project) == [
        f"webhook {server.url('/hook').split('/')[2]} (HTTP 200): a failed run"
    ]


def test_429_waits_for_retry_after_capped_and_gives_up_after_three_attempts(make_project, server, waits):
    server.route(
        "POST",
        "/hook/T0KEN-in-path",
        server.sequence([(429, {"Retry-After": "7"}, ""), (503, {"Retry-After": "3600"}, "")]),
    )
    project = project_with(make_project, server.url("/hook/T0KEN-in-path?token=abc"))
    notify_scheduled_failure(project, "r_1102_0900_abcd", [Failed("orders", ERROR)])
    assert len(server.requests_to("/hook/T0KEN-in-path")) == 3
    assert waits == [7.0, 30.0]
    [line] = notify_log(project)
    assert re.fullmatch(
        rf"\S+Z r_1102_0900_abcd webhook 127\.0\.0\.1:{server.port}: gave up after 3 attempts: HTTP 503", line
    ), line
    assert "T0KEN" not in line and "token" not in line


def test_404_is_not_retried(make_project, server, waits):
    project = project_with(make_project, server.url("/nowhere"))
    notify_scheduled_failure(project, "r_1", [Failed("orders", ERROR)])
    assert len(server.requests) == 1 and waits == []
    assert notify_log(project)[0].endswith(f"webhook 127.0.0.1:{server.port}: HTTP 404 (not retried)")


def test_a_server_that_never_answers_times_out_is_retried_and_logged(
    make_project, server, waits, monkeypatch
):
    release = threading.Event()

    def hang(*_):
        release.wait(10)
        return 200, {}, ""

    server.route("POST", "/hook", hang)
    monkeypatch.setenv("CROFT_NOTIFY_TIMEOUT_MS", "200")
    project = project_with(make_project, server.url("/hook"))
    try:
        notify_scheduled_failure(project, "r_1", [Failed("orders", ERROR)])
    finally:
        release.set()
    assert len(server.requests_to("/hook")) == 3 and waits == [1.0, 4.0]
    assert notify_log(project)[0].endswith("gave up after 3 attempts: no answer within 0.2 s (ReadTimeout)")


def test_a_refused_connection_is_logged_and_nothing_raises(make_project, waits):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    project = project_with(make_project, f"http://user:pw@127.0.0.1:{port}/hook/secret-path")
    notify_failed_start(project, "r_1", ["orders", "customers"], ERROR)
    [line] = notify_log(project)
    assert f"webhook 127.0.0.1:{port}: gave up after 3 attempts: ConnectError" in line
    assert "secret-path" not in line and "pw" not in line


def test_a_failed_start_is_sent_with_its_problem_and_dry_mode_records_both_channels(make_project, server):
    server.route("POST", "/hook", server.reply(200))
    root = make_project({".env": f"SHOP_KEY={SECRET}\n"}, notify={"webhook": server.url("/hook")})
    project = load_project(root)
    notify_failed_start(project, "r_1102_0900_wxyz", ["orders", "customers"], ERROR)
    payload = server.requests_to("/hook")[0].json()
    assert payload["data"] == {"runId": "r_1102_0900_wxyz", "status": "failed", "steps": []}
    assert payload["problems"][0]["code"] == "HTTP_ERROR"
    assert payload["text"].startswith(
        "croft: proj — orders and customers failed in a scheduled run: HTTP_ERROR"
    )
    records = [
        json.loads(line) for line in (root / ".croft/logs/notifications.ndjson").read_text().splitlines()
    ]
    assert [(r["kind"], r["status"]) for r in records] == [("desktop", "dry"), ("webhook", "sent")]
    assert records[0]["title"] == "croft: proj" and SECRET not in json.dumps(records)
    assert records[1]["host"] == f"127.0.0.1:{server.port}" and records[1]["attempts"] == 1


def test_the_ping_is_a_get_and_a_failing_one_is_logged_within_seconds(
    make_project, server, monkeypatch, tmp_path
):
    server.route("GET", "/ping", server.reply(200, "OK"))
    project = project_with(make_project, None, ping=server.url("/ping"))
    ping_after_tick(project)
    assert [r.method for r in server.requests_to("/ping")] == ["GET"]

    release = threading.Event()
    server.route("GET", "/slow", lambda *_: (release.wait(10), (200, {}, ""))[1])
    monkeypatch.setenv("CROFT_NOTIFY_TIMEOUT_MS", "150")
    slow = project_with(make_project, None, tmp_path / "slow", ping=server.url("/slow?uuid=abc"))
    try:
        ping_after_tick(slow)
    finally:
        release.set()
    assert len(server.requests_to("/slow")) == 1
    assert notify_log(slow)[0].endswith(f"- ping 127.0.0.1:{server.port}: no answer within 0.15 s")
    assert ping_after_tick(project_with(make_project, None)) is None  # no ping configured: nothing at all


def test_nothing_raises_when_the_state_folder_cannot_be_written(make_project, server, tmp_path):
    server.route("POST", "/hook", server.reply(500))
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    root = make_project(
        notify={"desktop": True, "webhook": server.url("/hook")}, stateDir=str(blocker / "state")
    )
    project = load_project(root)
    notify_scheduled_failure(project, "r_1", [Failed("../../escape", ERROR)])
    notify_failed_start(project, "../../escape", ["a"], ERROR)
    ping_after_tick(project)
    assert not Path(root.parent / "escape").exists()


def test_a_loopback_webhook_bypasses_the_http_proxy(make_project, server, monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_proxy = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server.route("POST", "/hook", server.reply(200))
    project = project_with(make_project, server.url("/hook"))
    notify_scheduled_failure(project, "r_1", [Failed("orders", ERROR)])
    assert (
        len(server.requests_to("/hook")) == 1 and notify_log(project) == [] and len(deliveries(project)) == 1
    )


@pytest.mark.processes
def test_a_ping_that_answers_logs_nothing_and_a_404_is_logged(make_project, server):
    import subprocess
    import sys

    server.route("GET", "/ping", server.reply(200))
    probe = """
from croft.project.config import load_project
from croft.notify.send import ping_after_tick
ping_after_tick(load_project())
"""
    for path, logged in (("/ping", False), ("/gone", True)):
        root = make_project(root=make_project().parent / path.strip("/"), notify={"ping": server.url(path)})
        out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        log = root / ".croft/logs/notify.log"
        assert log.exists() == logged
    assert log.read_text().rstrip().endswith(f"- ping 127.0.0.1:{server.port}: HTTP 404")
    assert [r.path for r in server.requests] == ["/ping", "/gone"]


def test_a_ping_whose_answer_drips_in_is_given_up_at_the_deadline(make_project, monkeypatch):
    """Each read gets a line before the socket timeout, so only the ping's own deadline ends it."""
    stop = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def drip() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.wait(0.05):
                try:
                    conn.sendall(b"X-Slow: y\r\n")
                except OSError:
                    return

    threading.Thread(target=drip, daemon=True).start()
    host = f"127.0.0.1:{listener.getsockname()[1]}"
    project = project_with(make_project, None, ping=f"http://{host}/ping")
    monkeypatch.setenv("CROFT_NOTIFY_TIMEOUT_MS", "200")
    try:
        ping_after_tick(project)
    finally:
        stop.set()
        listener.close()
    assert notify_log(project)[0].endswith(f"- ping {host}: no answer within 1.2 s")
