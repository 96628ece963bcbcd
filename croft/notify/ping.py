"""The dead-man's-switch ping and the run pings, over the standard library's HTTP client.

Not httpx: ``croft tick --all`` sends the minute's pings of every project, and httpx alone costs that
minute several times what the standard library does to import. Users ping one service (hc-ping.com,
say) from many projects, so the minute's pings are grouped by origin and each run of up to
``PER_CONNECTION`` of them goes over one keep-alive ``http.client`` connection: one connection (and one
TLS handshake, with one shared context) instead of one per ping. What a direct connection does not do
is left to ``urllib.request`` (``notify.pingurllib``, loaded only then: a direct ping needs only
``http.client``, cheaper to import): a URL the environment's proxies apply to (a loopback URL bypasses
them, as the webhook's does), and a redirect, followed from the answer that gave it. Every ping keeps the
notifiers' bounds (``notify.deadline``): a socket timeout per wait, a whole deadline, and at most
``ANSWER_BYTES`` of an answer read (a longer one ends its connection).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import ssl
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urljoin, urlsplit

from croft import __version__
from croft.notify.deadline import ANSWER_BYTES, Late, Unbegun, each_within, timeout_seconds, within
from croft.notify.log import host_of, log_miss, scrub_urls

if TYPE_CHECKING:
    from croft.notify.pingurllib import Detour

__all__ = [
    "AT_ONCE",
    "GRACE_S",
    "PER_CONNECTION",
    "PING_TIMEOUT_S",
    "ping",
    "ping_logged",
    "ping_many",
]

PING_TIMEOUT_S = 3.0
GRACE_S = 1.0  # beyond the socket timeout, for the whole request (or the whole minute's batch)
AT_ONCE = 16  # connections in flight side by side: they wait on the network, and each holds a socket
PER_CONNECTION = 10  # pings one connection carries one after another: ten round trips fit the deadline
REDIRECTS = frozenset({301, 302, 303, 307, 308})
AGENT = f"croft/{__version__}"
# how a kept-alive connection the server closed while idle is met (http.client's RemoteDisconnected is
# the first): before any answer, so the ping goes once more on a fresh connection
_HUNG_UP = (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError)


def _proxies_named() -> bool:
    """Whether a proxy of the environment could apply to a ping: a ``*_proxy`` variable set (what
    ``urllib.request.getproxies`` reads on Linux), or a system whose proxies are its own settings (macOS,
    Windows). Only then is urllib asked (``notify.pingurllib``)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return any(value and name.lower().endswith("_proxy") for name, value in os.environ.items())


class _Routes:
    """How a batch's pings leave: directly, or through urllib (``notify.pingurllib``: loaded only when the
    environment names a proxy or an answer redirects), with one TLS context for every ``https://`` ping
    (made only when there is one: loading the system's certificates is the dear part)."""

    def __init__(self, urls: Sequence[str]) -> None:
        https = any(url[:6].lower() == "https:" for url in urls)
        self.tls = ssl.create_default_context() if https else None
        self.proxies = _proxies_named()
        self._detour: Detour | None = None
        self._lock = threading.Lock()  # the batch's threads share it

    def proxied(self, url: str, parts: SplitResult) -> bool:
        """Whether urllib would send ``url`` through a proxy of the environment (a loopback URL: never)."""
        return self.proxies and self.detour().proxied(url, parts)

    def detour(self) -> Detour:
        """urllib's side of the batch (``pingurllib.Detour``), made the first time a ping needs it."""
        with self._lock:
            if self._detour is None:
                from croft.notify import pingurllib  # a proxy or a redirect: only then urllib

                self._detour = pingurllib.Detour(self.tls)
            return self._detour


@dataclass
class _Line:
    """One keep-alive connection to one origin, for a run of pings one thread sends one after another."""

    scheme: str
    host: str
    port: int | None
    timeout: float
    routes: _Routes
    conn: http.client.HTTPConnection | None = field(default=None, repr=False)

    def exchange(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, str]:
        """The answer's status and Location. A connection the server closed while idle is met on its next
        use before any answer came: the request goes once more on a fresh one; a ping whose answer
        was read is never sent again."""
        while True:
            if self.conn is None:
                self.conn = self._connect()
            reused = self.conn.sock is not None  # http.client reopens a connection the last answer closed
            try:
                self.conn.request(method, target, body=body, headers=headers)
                answer = self.conn.getresponse()
            except _HUNG_UP as exc:
                self.close()
                if reused:
                    continue  # on a fresh connection, which is not reused: a second failure is raised
                raise exc
            except BaseException:
                self.close()
                raise
            with contextlib.suppress(Exception):  # a broken body: the status is what counts
                answer.read(ANSWER_BYTES)  # a short body is drained, so the connection carries the next
            if not answer.isclosed():  # longer than a notifier reads: this connection ends here
                self.close()
            return answer.status, answer.getheader("Location") or ""

    def _connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout, context=self.routes.tls
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None


def _origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)``: the pings that may share a connection; a URL that does not parse is its own."""
    try:
        parts = urlsplit(url)
        return parts.scheme.lower(), parts.hostname or "", parts.port
    except ValueError:
        return "?", url, None


def _get(url: str, timeout: float, body: bytes | None, line: _Line) -> str | None:
    """One GET, or with ``body`` a POST of it as plain text (a run ping's failure carries its log tail):
    None when it answered 2xx, else why not, in one line; never raises."""
    method = "GET" if body is None else "POST"
    headers = {"User-Agent": AGENT}
    if body is not None:
        headers["Content-Type"] = "text/plain; charset=utf-8"
    try:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or line.routes.proxied(url, parts):
            return line.routes.detour().send(url, method, headers, body, timeout)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        status, location = line.exchange(method, target, headers, body)
        if 200 <= status < 300:
            return None
        if status not in REDIRECTS or not location:
            return f"HTTP {status}"
        new = urljoin(url, location)  # followed by urllib, to wherever it leads (a proxied host too)
        if status in (307, 308):
            return line.routes.detour().send(new, method, headers, body, timeout)
        # 301, 302, 303: a GET, without the body, as every client does
        return line.routes.detour().send(new, "GET", {"User-Agent": AGENT}, None, timeout)
    except Exception as exc:
        return _why(exc, url, timeout)


def _why(exc: BaseException, url: str, timeout: float) -> str:
    """A failed ping's reason in one line: urllib's URLError said by its reason, a timeout as such."""
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return f"no answer within {timeout:g} s"
    name = type(reason).__name__ if isinstance(reason, BaseException) else type(exc).__name__
    return f"{name}: {_said(reason, url)}"


def _said(reason: object, url: str) -> str:
    """The reason's words with the URL said by its host only and no piece of its path or query quoted
    (urllib quotes a bad one): a ping URL is its project's secret."""
    text = str(reason).replace(url, host_of(url))
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub_urls(text)
    target = f"{parts.path}?{parts.query}" if parts.query else parts.path
    for piece in (target, parts.path, parts.query):
        if len(piece) > 1:
            text = text.replace(piece, "…")
    return scrub_urls(text)


def _timeout() -> float:
    """The socket timeout of a ping: 3 s, or less by ``CROFT_NOTIFY_TIMEOUT_MS``."""
    return min(timeout_seconds(PING_TIMEOUT_S), PING_TIMEOUT_S)


def ping(url: str, timeout: float | None = None, body: bytes | None = None) -> str | None:
    """GET (or POST ``body`` to) ``url``: ``timeout`` seconds per socket wait and one more second in all.
    None when it answered, else why not (``HTTP 404``, ``no answer within 4 s``, ...); never raises."""
    timeout = _timeout() if timeout is None else timeout
    line = _Line(*_origin(url), timeout, _Routes([url]))
    try:
        return within(timeout + GRACE_S, lambda: _get(url, timeout, body, line))
    except Late:
        return f"no answer within {timeout + GRACE_S:g} s"
    finally:
        line.close()


def ping_logged(url: str, state_dir: str | os.PathLike[str], redactor: Any = None) -> bool:
    """Ping ``url``; a miss is one line in ``<state>/logs/notify.log``. Never raises; True when it answered.

    ``redactor`` is a no-argument callable returning the text redactor; it is called only on a miss, so
    the idle tick, which has no project loaded, reads ``.env`` only when there is something to log.
    """
    try:
        error = ping(url)
    except (Exception, KeyboardInterrupt) as exc:
        error = f"{type(exc).__name__}: {exc}"
    return _told(url, state_dir, redactor, error)


def _chains(urls: Sequence[str], timeout: float, routes: _Routes) -> tuple[list[list[int]], list[list[Any]]]:
    """The batch's pings as runs of at most ``PER_CONNECTION`` to one origin, each with a connection of
    its own: the targets' indexes, and the works sending them."""
    by_origin: dict[tuple[str, str, int | None], list[int]] = {}
    for i, url in enumerate(urls):
        by_origin.setdefault(_origin(url), []).append(i)
    indexes, works = [], []
    for origin, members in by_origin.items():
        for start in range(0, len(members), PER_CONNECTION):
            run = members[start : start + PER_CONNECTION]
            line = _Line(*origin, timeout, routes)
            indexes.append(run)
            works.append([partial(_get, urls[i], timeout, None, line) for i in run] + [line.close])
    return indexes, works


def ping_many(targets: Sequence[tuple[str, str | os.PathLike[str], Any]]) -> list[bool]:
    """Ping each ``(url, state folder, redactor)``: ``croft tick --all`` sends the minute's pings of every
    project at once, ``AT_ONCE`` connections side by side, all within one deadline (the socket timeout
    and one more second), so an endpoint that hangs for everyone never holds the minute. A miss is
    logged as ``ping_logged`` logs it: one still going at the deadline is "no answer", one not begun
    "not sent". Never raises; True for each ping that answered."""
    timeout = _timeout()
    bound = timeout + GRACE_S
    urls = [url for url, _, _ in targets]
    indexes, works = _chains(urls, timeout, _Routes(urls))
    outcomes: list[object] = [None] * len(targets)
    for run, results in zip(indexes, each_within(bound, works, AT_ONCE), strict=True):
        for i, outcome in zip(run, results, strict=False):  # the last work of each closes its connection
            outcomes[i] = outcome
    answered = []
    for (url, state_dir, redactor), outcome in zip(targets, outcomes, strict=True):
        if isinstance(outcome, Unbegun):
            error: str | None = f"not sent: the minute's pings took more than {bound:g} s"
        elif isinstance(outcome, Late):
            error = f"no answer within {bound:g} s"
        else:
            error = outcome  # type: ignore[assignment]
        answered.append(_told(url, state_dir, redactor, error))
    return answered


def _told(url: str, state_dir: str | os.PathLike[str], redactor: Any, error: str | None) -> bool:
    """True for a ping that answered; a miss is logged (redacted when the project's redactor can be had)."""
    if error is None:
        return True
    redact = None
    if redactor is not None:
        try:
            redact = redactor()
        except Exception:  # an unreadable .env: the line still goes out, URLs by host only
            redact = None
    try:
        log_miss(Path(state_dir), None, f"ping {host_of(url)}: {error}", redact)
    except Exception:  # a broken redactor must not fail the tick either
        with contextlib.suppress(Exception):  # nor a log that cannot be written
            log_miss(Path(state_dir), None, f"ping {host_of(url)}: failed")
    return False
