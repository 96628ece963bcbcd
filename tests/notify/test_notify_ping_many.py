"""``ping_many``: the minute's pings of every project, sent by ``croft tick --all`` itself, against a real
local HTTP server: every ping arrives (addresses side by side on sockets, names and redirects by
threads), each keeps its own bound, and every miss is one redacted line in its own project's notify.log."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from waiting import wait_for

from croft.notify import ping as ping_module
from croft.notify.ping import ping_many


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
    for i in range(70):  # addresses: on sockets side by side, more than OPEN_AT_ONCE of them
        targets.append((f"http://127.0.0.1:{port}/ping?n=a{i}", tmp_path / f"a{i}", None))
        expected.append(True)
    for i in range(12):  # names: by the threads
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
    everything = "".join(p.read_text() for p in tmp_path.rglob("notify.log"))
    assert "s3cret" not in everything and "/gone" not in everything


def test_a_ping_that_hangs_or_drips_is_a_miss_at_its_own_bound(server, tmp_path, monkeypatch):
    """Every ping has the one ping's bound (the socket timeout per wait, one second more in all) from its
    own start: a second wave of sockets, begun when the first ended, still gets its whole bound."""
    monkeypatch.setenv("CROFT_NOTIFY_TIMEOUT_MS", "200")
    monkeypatch.setattr(ping_module, "OPEN_AT_ONCE", 4)
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
    targets = [(f"http://127.0.0.1:{server.port}/hang?n={i}", tmp_path / f"h{i}", None) for i in range(6)]
    targets.append((f"http://localhost:{server.port}/hang?n=name", tmp_path / "name", None))
    targets.append((f"http://{drip_host}/ping", tmp_path / "drip", None))
    try:
        assert ping_many(targets) == [False] * len(targets)
    finally:
        release.set()
        stop.set()
        listener.close()
    assert sorted(r.query["n"] for r in server.requests_to("/hang")) == sorted(
        [str(i) for i in range(6)] + ["name"]
    )  # the two after the first four began only once those ended, and still reached the server
    for name in [f"h{i}" for i in range(6)] + ["name"]:
        (line,) = _log(tmp_path / name)
        assert line.endswith(": no answer within 0.2 s"), line
    (line,) = _log(tmp_path / "drip")
    assert line.endswith(f"- ping {drip_host}: no answer within 1.2 s")


def test_a_hanging_endpoint_never_holds_the_minute_past_its_rounds(server, tmp_path, monkeypatch):
    """More pings by name than the threads can take within ``PING_ROUNDS`` bounds: the ones not begun are
    "not sent" in their own logs, and the batch returns."""
    monkeypatch.setenv("CROFT_NOTIFY_TIMEOUT_MS", "100")
    monkeypatch.setattr(ping_module, "PING_THREADS", 1)
    monkeypatch.setattr(ping_module, "GRACE_S", 0.0)
    release = threading.Event()
    server.route("GET", "/hang", lambda *_: (release.wait(20), (200, {}, ""))[1])
    targets = [(f"http://localhost:{server.port}/hang", tmp_path / f"p{i}", None) for i in range(5)]
    try:
        assert ping_many(targets) == [False] * 5
    finally:
        release.set()
    lines = [line for i in range(5) for line in _log(tmp_path / f"p{i}")]
    assert len(lines) == 5  # one line each, whichever way it missed
    assert lines[0].endswith("no answer within 0.1 s")  # the one thread's first ping had its bound
    unsent = [line for line in lines if line.endswith("not sent: the minute's pings took more than 0.2 s")]
    assert 1 <= len(unsent) <= 3
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


URLS = [
    "http://127.0.0.1:8080/ping",
    "http://127.0.0.1/ping/abc-123",
    "http://hc-ping.example.com/0b1f?create=1&rid=x#frag",
    "http://Example.COM:080",
    "http://host?only=query",
    "http://host#frag?not=query",
    "http://host/p/ü",
    "http://host:65535/",
    "http://host:65536/",
    "http://host:0/",
    "http://host:/",
    "http://host:x/",
    "http://user:pw@host/",
    "http://user@host:81/",
    "http://[::1]:8080/ping",
    "http://%68ost/",
    "http:///nohost",
    "http://host/ spaced",
    "http://host/\ttab",
    " http://host/",
    "HTTP://host/",
    "https://host/",
    "http://host:٣/",
]


@pytest.mark.parametrize("url", URLS)
def test_a_ping_url_split_by_hand_is_split_as_urllib_splits_it(url: str, monkeypatch) -> None:
    """The usual ping URL is split without ``urllib.parse`` (which the idle minute would pay to import):
    where the hand split answers, it answers what urlsplit does; the rest goes to urlsplit."""
    from urllib.parse import urlsplit

    for name in ping_module._PROXY_NAMES:
        monkeypatch.delenv(name, raising=False)
    by_hand = ping_module._simple(url)
    try:
        parts = urlsplit(url)
        port = parts.port or 80
        usual = parts.scheme == "http" and parts.hostname and not (parts.username or parts.password)
        expected = (
            (
                parts.hostname,
                port,
                parts.netloc,
                (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
            )
            if usual
            else None
        )
    except ValueError:
        expected = None
    if url in URLS[:8]:  # the usual shapes: split by hand
        assert by_hand is not None
    if by_hand is not None:
        assert by_hand == expected
    assert ping_module._plain(url) == expected


def test_the_sockets_are_watched_by_epoll_where_there_is_one_and_by_poll_otherwise(
    server, monkeypatch
) -> None:
    """epoll looks only at the sockets that moved (a fifth of a hundred pings' cost); poll serves where
    there is none, or when no file descriptor is free for one, and the pings arrive either way."""
    import select
    import types

    server.route("GET", "/ping", server.reply(200, "ok"))
    url = server.url("/ping")
    for name in ping_module._PROXY_NAMES:
        monkeypatch.delenv(name, raising=False)
    if hasattr(select, "epoll"):  # Linux
        made = ping_module._poller(select)
        assert isinstance(made[0], select.epoll) and made[2:] == (select.EPOLLIN, select.EPOLLOUT)
        made[0].close()

    def no_fd() -> None:
        raise OSError(24, "Too many open files")

    without = types.SimpleNamespace(**{k: getattr(select, k) for k in ("poll", "POLLIN", "POLLOUT")})
    full = types.SimpleNamespace(**vars(without), epoll=no_fd)
    for fake in (without, full):
        poller, wait, readable, writable = ping_module._poller(fake)
        assert (readable, writable) == (select.POLLIN, select.POLLOUT) and wait(0) == []
        monkeypatch.setattr(
            ping_module, "_poller", lambda _select, made=(poller, wait, readable, writable): made
        )
        assert ping_many([(url, "/nowhere", None)] * 3) == [True, True, True]
    assert len(server.requests_to("/ping")) == 6
