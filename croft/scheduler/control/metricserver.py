"""``croft serve --metrics HOST:PORT``: ``croft metrics`` over HTTP at ``/metrics``, for a Prometheus scrape.

Beside serve's ticking, on threads of its own, and bounded: at most ``MAX_CONNECTIONS`` requests are
answered at once (one more is closed at once with 503), a client has ``HEADER_TIMEOUT_S`` to send its
request line and headers, and a body is never read. Only GET and HEAD of ``/metrics`` are answered; every
look is taken afresh (a scrape every 15 s costs one ``croft metrics``). The request line and headers are
capped by ``BaseHTTPRequestHandler`` itself (64 KiB a line, 100 headers).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from croft.core.problems import CroftError
from croft.scheduler.control.metrics import CONTENT_TYPE, gather

__all__ = ["HEADER_TIMEOUT_S", "MAX_CONNECTIONS", "MetricServer", "parse_address", "start"]

MAX_CONNECTIONS = 8
HEADER_TIMEOUT_S = 10.0


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as (host, port); a clear USAGE error otherwise."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CroftError(
            "USAGE",
            f"--metrics takes HOST:PORT, not {text!r}",
            "Give the address to listen on, such as 127.0.0.1:9464 (Prometheus' usual port for exporters).",
            suggestion="croft serve --metrics 127.0.0.1:9464",
        )
    return host, int(port)


class MetricServer(ThreadingHTTPServer):
    daemon_threads = True  # a slow scraper must not keep serve from stopping
    block_on_close = False

    def __init__(self, address: tuple[str, int]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.lock = threading.Lock()
        self.active = 0  # connections being answered, at most MAX_CONNECTIONS

    @property
    def address(self) -> str:
        host, port = str(self.server_address[0]), int(self.server_address[1])
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        """A connection past the bound is answered 503 and closed here, without a thread."""
        with self.lock:
            admitted = self.active < MAX_CONNECTIONS
            self.active += admitted
        if not admitted:
            with contextlib.suppress(OSError):
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.lock:
                self.active -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Nothing on serve's stderr: a scraper that went away mid-answer is not serve's trouble, and a
        failed look was answered 500 already (``do_GET``)."""

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: MetricServer
    protocol_version = "HTTP/1.1"
    server_version = "croft-metrics"
    sys_version = ""
    timeout = HEADER_TIMEOUT_S  # no single read waits longer (and all of them together: handle)

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: serve's own lines go to the tick log, and a scrape every 15 s would drown them."""

    def handle(self) -> None:
        """One request per connection, whose request line and headers must all arrive within
        ``HEADER_TIMEOUT_S`` (a total deadline, not one per read: a client trickling bytes is cut off too)."""
        self.close_connection = True
        self.timed_out = False
        self.deadline = threading.Timer(HEADER_TIMEOUT_S, self._cut)
        self.deadline.daemon = True
        self.deadline.start()
        try:
            self.handle_one_request()
        finally:
            self.deadline.cancel()

    def _cut(self) -> None:
        self.timed_out = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RD)  # the blocked read returns: the request ends unread

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _fail(self, text: str) -> None:
        self._send(HTTPStatus.INTERNAL_SERVER_ERROR, (text + "\n").encode(), "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        self.deadline.cancel()  # the headers are in: the look itself may take its time
        if self.timed_out:  # cut off: what was read is not a whole request, whatever it looks like
            return
        if self.path.split("?", 1)[0] != "/metrics":
            self._send(
                HTTPStatus.NOT_FOUND, b"croft serves its metrics at /metrics\n", "text/plain; charset=utf-8"
            )
            return
        try:
            text = gather().data["text"]
        except CroftError as exc:  # the registry itself cannot be read: say so, as a scrape failure
            self._fail(f"{exc.problem.code}: {exc.problem.message}")
            return
        except Exception as exc:  # a bug in one look must not end the server or print a traceback
            self._fail(f"INTERNAL_ERROR: {type(exc).__name__}: {exc}")
            return
        self._send(HTTPStatus.OK, text.encode("utf-8"), CONTENT_TYPE)

    do_HEAD = do_GET


def start(address: tuple[str, int]) -> MetricServer:
    """Bind (PORT_IN_USE when it cannot) and answer on a thread; ``close`` stops it."""
    host, port = address
    try:
        server = MetricServer(address)
    except OSError as exc:
        raise CroftError(
            "PORT_IN_USE",
            f"croft serve cannot serve its metrics on {host}:{port}: {exc.strerror or exc}",
            "Another program holds that address (or it is not one of this machine's): pick another with"
            " --metrics HOST:PORT.",
            details={"port": port},
        ) from None
    threading.Thread(target=server.serve_forever, name="croft-metrics", daemon=True).start()
    return server
