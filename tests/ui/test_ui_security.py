"""Safe on localhost, against a real ``croft ui`` process: the token, the Host, the CSRF token and the
Origin, and the headers on every response."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from projectkit import one_ingest
from uikit import Ui, running_ui

from croft.ui.guard import HEADERS

pytestmark = pytest.mark.processes


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    root = one_ingest(tmp_path_factory.mktemp("ui-sec") / "proj")
    with running_ui("--project", str(root), cwd=root) as running:
        yield running


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    def getheader(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def ask(
    ui: Ui,
    method: str,
    path: str,
    *,
    host: str | None = None,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=30)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", host or f"127.0.0.1:{ui.port}")
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if data is not None:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        answer = conn.getresponse()
        try:
            text = answer.read().decode() if path != "/events" else ""  # a stream never ends: headers only
            return Answer(answer.status, {k.lower(): v for k, v in answer.getheaders()}, text)
        finally:
            answer.close()
    finally:
        conn.close()


def cookie(ui: Ui) -> str:
    answer = ask(ui, "GET", f"/?token={ui.token}")
    assert answer.status == 303 and answer.getheader("Location") == "/"
    set_cookie = answer.getheader("Set-Cookie") or ""
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and "Path=/" in set_cookie
    return set_cookie.split(";", 1)[0]


def csrf(ui: Ui, jar: str) -> str:
    html = ask(ui, "GET", "/", headers={"Cookie": jar}).body
    return html.split('<meta name=csrf content="', 1)[1].split('"', 1)[0]


def assert_headers(answer: Answer) -> None:
    for name, value in HEADERS.items():
        assert answer.getheader(name) == value, (answer.status, name, answer.getheader(name))


def test_the_token_visit_swaps_the_token_for_a_cookie_and_drops_it_from_the_address(ui: Ui) -> None:
    jar = cookie(ui)
    answer = ask(ui, "GET", "/", headers={"Cookie": jar})
    assert answer.status == 200
    assert ask(ui, "GET", "/api/status", headers={"Cookie": jar}).status == 200
    kept = ask(ui, "GET", f"/asset?token={ui.token}&asset=orders")
    assert kept.status == 303 and kept.getheader("Location") == "/asset?asset=orders"


def test_no_token_or_a_wrong_one_is_403(ui: Ui) -> None:
    for path in ("/", "/api/status", "/static/ui.js", "/events", "/asset?asset=orders", "/?token=guess"):
        assert ask(ui, "GET", path).status == 403, path
    assert ask(ui, "GET", "/", headers={"Cookie": f"croft_ui_{ui.port}={ui.token}"}).status == 403


def test_a_foreign_host_is_421_even_with_the_token_or_the_cookie(ui: Ui) -> None:
    jar = cookie(ui)
    for host in ("evil.example", f"evil.example:{ui.port}", "127.0.0.1:1", f"127.0.0.2:{ui.port}"):
        assert ask(ui, "GET", "/", host=host, headers={"Cookie": jar}).status == 421, host
        assert ask(ui, "GET", f"/?token={ui.token}", host=host).status == 421, host
    assert ask(ui, "GET", "/", host=f"localhost:{ui.port}", headers={"Cookie": jar}).status == 200


def test_a_post_needs_the_csrf_token_and_this_pages_origin(ui: Ui) -> None:
    jar = cookie(ui)
    token = csrf(ui, jar)
    me = f"http://127.0.0.1:{ui.port}"
    body = {"project": "nowhere"}
    cases = [
        {"Cookie": jar, "Origin": me},  # no CSRF token
        {"Cookie": jar, "Origin": me, "X-CSRF-Token": "forged"},
        {"Cookie": jar, "Origin": "http://evil.example", "X-CSRF-Token": token},
        {"Cookie": jar, "X-CSRF-Token": token},  # no Origin
        {"Origin": me, "X-CSRF-Token": token},  # no cookie
    ]
    for headers in cases:
        for path in ("/api/run", "/api/pause", "/api/resume"):
            assert ask(ui, "POST", path, headers=headers, body=body).status == 403, (path, headers)
    # the same request with all three passes the gate (and is told the project is not on this page)
    good = ask(
        ui, "POST", "/api/pause", headers={"Cookie": jar, "Origin": me, "X-CSRF-Token": token}, body=body
    )
    assert good.status == 200


def test_the_headers_are_on_every_response(ui: Ui) -> None:
    jar = cookie(ui)
    answers = [
        ask(ui, "GET", f"/?token={ui.token}"),
        ask(ui, "GET", "/", headers={"Cookie": jar}),
        ask(ui, "GET", "/api/status", headers={"Cookie": jar}),
        ask(ui, "GET", "/static/ui.js", headers={"Cookie": jar}),
        ask(ui, "GET", "/static/ui.css", headers={"Cookie": jar}),
        ask(ui, "GET", "/nothing", headers={"Cookie": jar}),
        ask(ui, "GET", "/"),
        ask(ui, "GET", "/", host="evil.example"),
        ask(ui, "POST", "/api/run", headers={"Cookie": jar}, body={}),
        ask(ui, "GET", "/events", headers={"Cookie": jar}),
    ]
    assert [a.status for a in answers] == [303, 200, 200, 200, 200, 404, 403, 421, 403, 200]
    for answer in answers:
        assert_headers(answer)
    assert answers[3].getheader("Content-Type").startswith("text/javascript")
    assert answers[-1].getheader("Content-Type") == "text/event-stream"


def test_api_status_is_the_commands_own_json(ui: Ui, tmp_path: Path) -> None:
    import subprocess
    import sys

    jar = cookie(ui)
    snap = json.loads(ask(ui, "GET", "/api/status", headers={"Cookie": jar}).body)
    project = snap["projects"][0]
    for args, key in ((["status"], "status"),):
        out = subprocess.run(
            [sys.executable, "-m", "croft", *args, "--json", "--project", project["root"]],
            capture_output=True,
            text=True,
            timeout=60,
        )
        mine = json.loads(out.stdout)
        assert mine.keys() == project[key].keys()
        assert [a["asset"] for a in mine["data"]["assets"]] == [
            a["asset"] for a in project[key]["data"]["assets"]
        ]
        assert mine["data"]["assets"][0].keys() == project[key]["data"]["assets"][0].keys()
