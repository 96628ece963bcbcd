"""A real HTTP server on 127.0.0.1 for tests: programmable routes and a log of every request it saw.

Tests of ingests, the webhook and the demo talk to a real socket instead of a mock, so redirects,
timeouts, refused connections and headers behave as they do in production.

Usage::

    from httpserver import serve            # tests/ is on sys.path under pytest

    with serve() as server:                 # or take the ``http_server`` fixture (conftest re-exports it)
        server.route("GET", "/items", lambda method, path, query, headers, body: (200, {}, [{"id": 1}]))
        server.route("GET", "/flaky", server.sequence([(503, {}, b""), (200, {}, {"ok": True})]))
        server.route("POST", "/hook", server.reply(204))
        client.get(server.url("/items?since=2026"))
        assert server.requests[0].query == {"since": "2026"}
        assert server.requests_to("/hook")[0].json() == {...}

A handler is called as ``handler(method, path, query, headers, body)``:
    method   "GET", "POST", ...
    path     the path without the query string ("/items")
    query    dict name -> value; a name given more than once maps to the list of its values
    headers  dict with lower-cased names
    body     the raw request body (bytes, b"" when none)
and returns ``(status, headers, body)``. A dict or list body is sent as JSON (content-type
application/json), a str as UTF-8 text, bytes as they are; headers given win over these defaults.
Routes match on method and exact path; anything else gets 404 ``{"error": "no route"}``. A handler
that raises gets a 500 and the exception is kept in ``server.errors`` (tests can assert it is empty).

A handler may block (e.g. wait on a ``threading.Event``) to provoke a client read timeout; handler
threads are daemons and a client that hangs up is not an error, so the server still shuts down at once.

``server.endless(status)`` answers with headers and then a body that never ends (64 KiB at a time,
without a Content-Length, until the client hangs up or the server stops); ``server.streamed`` counts
the bytes it got out, so a test can tell how much of it a client read.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

__all__ = ["Handler", "Recorded", "Reply", "TestServer", "http_server", "serve"]

Reply = tuple[int, dict[str, str], Any]
Handler = Callable[[str, str, dict[str, Any], dict[str, str], bytes], Reply]


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    query: dict[str, Any]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Endless:
    """A body that never ends (``TestServer.endless``)."""

    CHUNK = b"x" * 65536


def _encode(body: Any, headers: dict[str, str]) -> tuple[Any, dict[str, str]]:
    """Turn a handler's body into bytes plus default headers, letting the handler's own headers win."""
    if isinstance(body, Endless):
        return body, {"Content-Type": "text/plain", "Connection": "close", **headers}
    if body is None:
        payload, kind = b"", None
    elif isinstance(body, bytes):
        payload, kind = body, "application/octet-stream"
    elif isinstance(body, str):
        payload, kind = body.encode(), "text/plain; charset=utf-8"
    else:
        payload, kind = json.dumps(body).encode(), "application/json"
    out = {"Content-Length": str(len(payload))}
    if kind and payload:
        out["Content-Type"] = kind
    lowered = {k.lower() for k in headers}
    out = {k: v for k, v in out.items() if k.lower() not in lowered}
    out.update(headers)
    return payload, out


class TestServer:
    """The running server: add routes, build URLs, read what was sent."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self) -> None:
        self._httpd: ThreadingHTTPServer | None = None
        self._routes: dict[tuple[str, str], Handler] = {}
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.errors: list[BaseException] = []
        self.streamed = 0  # bytes of endless bodies sent
        self.stopping = threading.Event()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not started; use serve()"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base_url + path

    def route(self, method: str, path: str, handler: Handler) -> None:
        """Answer ``method path`` with ``handler``; a later call for the same pair replaces it."""
        with self._lock:
            self._routes[(method.upper(), path)] = handler

    def requests_to(self, path: str, method: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == path and (method is None or r.method == method)]

    @staticmethod
    def reply(status: int = 200, body: Any = None, headers: dict[str, str] | None = None) -> Handler:
        """A handler that always gives the same answer."""
        return lambda *_: (status, dict(headers or {}), body)

    @staticmethod
    def endless(status: int = 200) -> Handler:
        """A handler whose answer's body never ends."""
        return lambda *_: (status, {}, Endless())

    @staticmethod
    def sequence(replies: Sequence[Reply]) -> Handler:
        """A handler that gives ``replies`` in turn and then repeats the last one."""
        pending = list(replies)
        lock = threading.Lock()

        def handler(*_: Any) -> Reply:
            with lock:
                return pending.pop(0) if len(pending) > 1 else pending[0]

        return handler

    # -- called from handler threads ------------------------------------------------------------

    def _dispatch(self, request: Recorded) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append(request)
            handler = self._routes.get((request.method, request.path))
        if handler is None:
            missing = {"error": "no route", "method": request.method, "path": request.path}
            status, headers, body = 404, {}, missing
        else:
            try:
                status, headers, body = handler(
                    request.method, request.path, request.query, request.headers, request.body
                )
            except Exception as exc:
                with self._lock:
                    self.errors.append(exc)
                status, headers, body = 500, {}, f"handler raised {exc!r}"
        payload, headers = _encode(body, dict(headers))
        return status, headers, payload


def _request_handler(server: TestServer) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            parts = urlsplit(self.path)
            pairs = parse_qs(parts.query, keep_blank_values=True)
            query = {k: v[0] if len(v) == 1 else v for k, v in pairs.items()}
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, out_headers, payload = server._dispatch(
                Recorded(self.command, parts.path, query, headers, body)
            )
            self.send_response(status)
            for name, value in out_headers.items():
                self.send_header(name, value)
            self.end_headers()
            if isinstance(payload, Endless):
                self.close_connection = True
                while not server.stopping.is_set():
                    try:
                        self.wfile.write(Endless.CHUNK)
                    except OSError:  # the client hung up: what it should do
                        return
                    with server._lock:
                        server.streamed += len(Endless.CHUNK)
            elif self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the request log is ``server.requests``."""

    return RequestHandler


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True  # a handler blocked on purpose must not hold up shutdown
    request_queue_size = 256  # a hundred pings side by side are not dropped by a full accept queue

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (timeouts in tests) is expected; anything else is printed as usual."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serve() -> Iterator[TestServer]:
    """Start a server on a free port of 127.0.0.1 in a thread; stop it and close its socket on exit."""
    server = TestServer()
    httpd = _Httpd(("127.0.0.1", 0), _request_handler(server))
    server._httpd = httpd
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()  # endless bodies end
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def http_server() -> Iterator[TestServer]:
    """A fresh TestServer per test; conftest re-exports it (``from httpserver import http_server``)."""
    with serve() as server:
        yield server
