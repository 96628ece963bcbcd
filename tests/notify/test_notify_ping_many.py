"""``ping_many``: the minute's pings of every project, sent by ``croft tick --all`` itself, against a real
local HTTP server: every ping arrives (a few in flight side by side, a redirect followed), the batch
keeps one deadline, proxies and TLS are the environment's, and every miss is one redacted line in its
own project's notify.log."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from waiting import wait_for

from croft.notify import ping as ping_module
from croft.notify.ping import ping, ping_many


def _log(state: Path) -> list[str]:
    path = state / "logs" / "notify.log"
    return path.read_text().splitlines() if path.exists() else []


def _hide(word: str):
    """A redactor as ``tick --all`` hands it over: a callable giving the text redactor, called on a miss."""
    return lambda: lambda text: text.replace(word, "[redacted]")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_every_ping_arrives_and_each_miss_is_logged_redacted_in_its_own_project(server, tmp_path):
    server.route("GET", "/ping", server.reply(200, "ok"))
    server.route("GET", "/gone", server.reply(404))
    server.route("GET", "/moved", server.reply(302, "", {"Location": server.url("/ping?n=moved")}))
    port = server.port
    targets, expected = [], []
    for i in range(70):  # more than AT_ONCE of them
        targets.append((f"http://127.0.0.1:{port}/ping?n=a{i}", tmp_path / f"a{i}", None))
        expected.append(True)
    for i in range(12):  # names, looked up
        targets.append((f"http://localhost:{port}/ping?n=n{i}", tmp_path / f"n{i}", None))
        expected.append(True)
    targets.append((f"http://127.0.0.1:{port}/moved?uuid=abc", tmp_path / "moved", None))
    expected.append(True)
    targets.append((f"http://127.0.0.1:{port}/gone?uuid=s3cret", tmp_path / "gone", _hide("404")))
    expected.append(False)
    refused = _closed_port()
    targets.append((f"http://127.0.0.1:{refused}/ping?uuid=s3cret", tmp_path / "refused", None))
    expected.append(False)
    targets.append((f"http://localhost:{port}/gone?uuid=s3cret", tmp_path / "gone-by-name", _hide("404")))
    expected.append(False)
    targets.append((f"http://127.0.0.1:{port}/a space/gone?uuid=s3cret", tmp_path / "spaced", None))
    expected.append(False)  # urllib refuses it, quoting its path and query

    assert ping_many(targets) == expected
    arrived = sorted(r.query["n"] for r in server.requests_to("/ping"))
    assert arrived == sorted([f"a{i}" for i in range(70)] + [f"n{i}" for i in range(12)] + ["moved"])
    assert [r.method for r in server.requests] == ["GET"] * len(server.requests)
    assert all(r.headers["user-agent"].startswith("croft/") for r in server.requests)
    for name in ("a0", "a69", "n0", "moved"):
        assert _log(tmp_path / name) == []
    for name in ("gone", "gone-by-name"):
        (line,) = _log(tmp_path / name)
        assert line.endswith(f" - ping 127.0.0.1:{port}: HTTP [redacted]") or line.endswith(
            f" - ping localhost:{port}: HTTP [redacted]"
        )
    (line,) = _log(tmp_path / "refused")
    assert f"ping 127.0.0.1:{refused}: ConnectionRefusedError" in line
    (line,) = _log(tmp_path / "spaced")
    assert " - ping 127.0.0.1:" in line and ": InvalidURL: " in line
    everything = "".join(p.read_text() for p in tmp_path.rglob("notify.log"))
    assert "s3cret" not in everything and "/gone" not in everything


def test_a_ping_that_hangs_or_drips_is_a_miss_and_the_batch_ends_at_its_deadline(
    server, tmp_path, monkeypatch
):
    """A hanging answer ends at the socket timeout, which lets the next ping begin; one that drips in (a
    header line before each timeout) runs until the batch's one deadline, the socket timeout and a
    second more."""
    monkeypatch.setenv("CROFT_NOTIFY_TIMEOUT_MS", "200")
    monkeypatch.setattr(ping_module, "AT_ONCE", 4)
    release = threading.Event()
    server.route("GET", "/hang", lambda *_: (release.wait(20), (200, {}, ""))[1])
    stop = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

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
    drip_host = f"127.0.0.1:{listener.getsockname()[1]}"
    targets = [(f"http://{drip_host}/ping", tmp_path / "drip", None)]
    targets += [(f"http://127.0.0.1:{server.port}/hang?n={i}", tmp_path / f"h{i}", None) for i in range(5)]
    targets.append((f"http://localhost:{server.port}/hang?n=name", tmp_path / "name", None))
    try:
        assert ping_many(targets) == [False] * len(targets)
    finally:
        release.set()
        stop.set()
        listener.close()
    assert sorted(r.query["n"] for r in server.requests_to("/hang")) == sorted(
        [str(i) for i in range(5)] + ["name"]
    )  # the three after the first three began only once those ended, and still reached the server
    for name in [f"h{i}" for i in range(5)] + ["name"]:
        (line,) = _log(tmp_path / name)
        assert line.endswith(": no answer within 0.2 s"), line
    (line,) = _log(tmp_path / "drip")
    assert line.endswith(f"- ping {drip_host}: no answer within 1.2 s")


def test_a_hanging_endpoint_never_holds_the_minute_past_its_deadline(server, tmp_path, monkeypatch):
    """More hanging pings than one thread can take before the deadline: the ones not begun are "not sent"
    in their own logs, and the batch returns."""
    monkeypatch.setenv("CROFT_NOTIFY_TIMEOUT_MS", "100")
    monkeypatch.setattr(ping_module, "AT_ONCE", 1)
    monkeypatch.setattr(ping_module, "GRACE_S", 0.15)
    release = threading.Event()
    server.route("GET", "/hang", lambda *_: (release.wait(20), (200, {}, ""))[1])
    targets = [(f"http://localhost:{server.port}/hang", tmp_path / f"p{i}", None) for i in range(5)]
    try:
        assert ping_many(targets) == [False] * 5
    finally:
        release.set()
    lines = [line for i in range(5) for line in _log(tmp_path / f"p{i}")]
    assert len(lines) == 5  # one line each, whichever way it missed
    assert lines[0].endswith("no answer within 0.1 s")  # the one thread's first ping had its timeout
    unsent = [line for line in lines if line.endswith("not sent: the minute's pings took more than 0.25 s")]
    assert 1 <= len(unsent) <= 3
    assert all(
        line.endswith(("no answer within 0.1 s", "no answer within 0.25 s"))
        for line in lines[1 : 5 - len(unsent)]
    )
    wait_for(lambda: len(server.requests_to("/hang")) == 5 - len(unsent), "each begun ping at the server")


@pytest.mark.processes
def test_more_pings_than_free_file_descriptors_all_arrive(server, tmp_path):
    """A process short of descriptors (a low open-file limit) waits for a socket to end before the next."""
    server.route("GET", "/ping", server.reply(200, "ok"))
    probe = f"""
import json, resource
from croft.notify.ping import ping_many
resource.setrlimit(resource.RLIMIT_NOFILE, (40, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
targets = [("http://127.0.0.1:{server.port}/ping?n=%d" % i, {str(tmp_path)!r} + "/p%d" % i, None)
           for i in range(150)]
print(json.dumps(ping_many(targets)))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [True] * 150
    assert sorted(int(r.query["n"]) for r in server.requests_to("/ping")) == list(range(150))
    assert not list(tmp_path.rglob("notify.log"))


@pytest.mark.processes
def test_a_direct_ping_loads_no_urllib_and_a_redirect_or_a_proxy_does(server, tmp_path):
    """What the settled minute of a pinged project pays to import: ``http.client``, not ``urllib.request``
    (``notify.pingurllib``), which only a redirect or a proxy of the environment loads."""
    server.route("GET", "/ping", server.reply(200, "ok"))
    server.route("GET", "/moved", server.reply(302, "", {"Location": server.url("/ping?n=moved")}))
    probe = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from croft.notify.ping import ping_many
loaded = lambda: sorted({{"urllib.request", "croft.notify.pingurllib"}} & set(sys.modules))
found = [loaded()]
found.append(ping_many([("http://127.0.0.1:{server.port}/ping?n=1", {str(tmp_path)!r}, None)]) + loaded())
found.append(ping_many([("http://127.0.0.1:{server.port}/moved", {str(tmp_path)!r}, None)]) + loaded())
print(json.dumps(found))
"""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    out = subprocess.run(
        [sys.executable, "-S", "-P", "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    later = ["croft.notify.pingurllib", "urllib.request"]
    system_proxies = sys.platform in ("darwin", "win32")  # their proxies are settings only urllib reads
    assert json.loads(out.stdout) == [[], [True, *later] if system_proxies else [True], [True, *later]]
    probe = probe.replace("/moved", "/ping?n=2")
    env["http_proxy"] = server.base_url  # a proxy named: urllib asked, even for a loopback URL it skips
    out = subprocess.run(
        [sys.executable, "-S", "-P", "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert json.loads(out.stdout) == [[], [True, *later], [True, *later]]
    assert sorted(r.query["n"] for r in server.requests_to("/ping")) == ["1", "1", "2", "moved"]


def _no_proxy_set(monkeypatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_pings_go_through_the_environments_proxy_and_loopback_ones_around_it(server, tmp_path, monkeypatch):
    """``http_proxy`` carries a ping to another host, and the redirect it gets (the local server plays the
    proxy: it gets the absolute URL); a loopback URL skips a dead proxy, as the webhook does; a dead proxy
    is a miss."""
    server.route("GET", "/abc", server.reply(200, "ok"))
    server.route(
        "GET", "/moved", server.reply(302, "", {"Location": "http://hc-ping.example/abc?uuid=moved"})
    )
    server.route("GET", "/ping", server.reply(200, "ok"))
    _no_proxy_set(monkeypatch)
    monkeypatch.setenv("http_proxy", server.base_url)
    targets = [
        ("http://hc-ping.example/abc?uuid=s3cret", tmp_path / "proxied", None),
        (server.url("/ping"), tmp_path / "loopback", None),
        ("http://hc-ping.example/moved", tmp_path / "moved", None),
    ]
    assert ping_many(targets) == [True, True, True]
    proxied = server.requests_to("/abc")
    assert {r.headers["host"] for r in proxied} == {"hc-ping.example"}
    assert sorted(r.query["uuid"] for r in proxied) == ["moved", "s3cret"]
    targets = targets[:2]

    dead = _closed_port()
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{dead}")
    assert ping_many(targets) == [False, True]
    (line,) = _log(tmp_path / "proxied")
    assert " - ping hc-ping.example: ConnectionRefusedError: " in line and "s3cret" not in line
    assert len(server.requests_to("/ping")) == 2


def test_a_redirect_is_followed_without_reading_its_body(server, tmp_path) -> None:
    server.route(
        "GET", "/moved", lambda *_: (302, {"Location": server.url("/ping")}, server.endless(302)()[2])
    )
    server.route("GET", "/ping", server.reply(200, "ok"))
    assert ping_many([(server.url("/moved"), tmp_path / "p", None)]) == [True]
    assert ping(server.url("/moved"), timeout=2) is None
    assert len(server.requests_to("/ping")) == 2
    assert server.streamed < 64 * 1024 * 1024  # what the socket buffers took, not a body read to its end


@pytest.fixture
def tls_server(tmp_path):
    """A local HTTPS server with a certificate for 127.0.0.1 made by the ``openssl`` command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command on this machine to make a certificate with")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    got: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            got.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", cert, got
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_https_ping_is_checked_against_the_trusted_certificates(tls_server, tmp_path, monkeypatch):
    base, cert, got = tls_server
    _no_proxy_set(monkeypatch)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # OpenSSL's own knob: this certificate is trusted
    targets = [(f"{base}/ping?n={i}", tmp_path / f"p{i}", None) for i in range(3)]
    assert ping_many(targets) == [True, True, True]
    assert sorted(got) == [f"/ping?n={i}" for i in range(3)]

    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "none.pem"))  # nothing trusted: a miss, said why
    assert ping_many(targets[:1]) == [False]
    (line,) = _log(tmp_path / "p0")
    assert f"- ping {base.removeprefix('https://')}: SSLCertVerificationError: " in line
    assert "/ping" not in line


class _KeepAlive(http.server.ThreadingHTTPServer):
    """A local HTTP/1.1 server that keeps connections open, as real ping services do, and counts them;
    ``hang_up`` makes it close each connection after its answer without saying so (an idle timeout met
    between two pings); ``/big`` answers with more than a notifier reads."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, hang_up: bool = False) -> None:
        self.hang_up = hang_up
        self.ports: set[int] = set()  # the client's end of each connection a request came over
        self.paths: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with server.lock:
                    server.paths.append(self.path)
                    server.ports.add(self.client_address[1])
                body = b"x" * (64 * 1024) if self.path.startswith("/big") else b"ok"
                status = 500 if self.path.startswith("/fail") else 200
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()  # no "Connection: close", even when it hangs up
                self.wfile.write(body)
                self.close_connection = server.hang_up

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def connections(self) -> int:
        return len(self.ports)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def handle_error(self, request: object, client_address: object) -> None:
        """A client hanging up on an answer it will not read to its end is what it should do."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@pytest.fixture
def keep_alive():
    started: list[_KeepAlive] = []

    def start(hang_up: bool = False) -> _KeepAlive:
        httpd = _KeepAlive(hang_up)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        return httpd

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def test_pings_to_one_host_share_one_keep_alive_connection(keep_alive, tmp_path, monkeypatch):
    """Ten pings of ten projects to one service: one connection; more than a connection carries are spread
    over a few; a host of its own gets a connection of its own."""
    _no_proxy_set(monkeypatch)
    httpd, other = keep_alive(), keep_alive()
    targets = [(httpd.url(f"/ping?n={i}"), tmp_path / f"p{i}", None) for i in range(10)]
    assert ping_many(targets) == [True] * 10
    assert httpd.connections == 1
    assert sorted(httpd.paths) == sorted(f"/ping?n={i}" for i in range(10))

    many = [(httpd.url(f"/ping?m={i}"), tmp_path / f"m{i}", None) for i in range(25)]
    assert ping_many([*many, (other.url("/ping?n=other"), tmp_path / "other", None)]) == [True] * 26
    assert httpd.connections == 1 + 3  # 25 pings, 10 to a connection
    assert other.connections == 1 and other.paths == ["/ping?n=other"]
    assert not list(tmp_path.rglob("notify.log"))


def test_a_connection_the_server_closed_between_pings_is_opened_again_and_no_ping_goes_twice(
    keep_alive, tmp_path, monkeypatch
):
    """The server hangs up after each answer without saying so: each next ping meets a closed connection,
    goes once more on a fresh one, and arrives once. An answer read (a 500) is never asked again; an answer
    longer than a notifier reads ends its connection, and the next ping still arrives."""
    _no_proxy_set(monkeypatch)
    httpd = keep_alive(hang_up=True)
    targets = [(httpd.url(f"/ping?n={i}"), tmp_path / f"p{i}", None) for i in range(6)]
    targets.append((httpd.url("/fail?n=s3cret"), tmp_path / "fail", None))
    targets.append((httpd.url("/ping?n=last"), tmp_path / "last", None))
    assert ping_many(targets) == [True] * 6 + [False, True]
    assert sorted(httpd.paths) == sorted(
        [f"/ping?n={i}" for i in range(6)] + ["/fail?n=s3cret", "/ping?n=last"]
    )
    assert httpd.connections == 8  # one per ping: each found the last one closed
    (line,) = _log(tmp_path / "fail")
    assert line.endswith(f"- ping 127.0.0.1:{httpd.server_address[1]}: HTTP 500") and "s3cret" not in line

    steady = keep_alive()
    big = [
        (steady.url("/big"), tmp_path / "big", None),
        (steady.url("/ping?n=after"), tmp_path / "after", None),
    ]
    assert ping_many(big) == [True, True]
    assert steady.paths == ["/big", "/ping?n=after"]
    assert steady.connections == 2  # the long answer was not read to its end: its connection ended
