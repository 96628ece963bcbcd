"""The dead-man's-switch ping: one GET after each completed project tick, with the standard library only.

It runs on the every-minute tick path, which must not import httpx (nor click, which httpx pulls in).
A plain ``http://`` URL that no proxy of the environment applies to (any loopback one, or any when no
proxy is set) is one request on a socket: its status line and headers read, nothing else, which costs
a fraction of what ``urllib.request`` costs to load and to open (``croft tick --all`` sends a hundred a
minute). Anything else (``https://``, a proxy, a redirect to follow, credentials in the URL) goes
through ``urllib.request``, loaded then. A loopback URL bypasses any HTTP proxy, as the webhook does.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

from croft.core import knobs

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "GRACE_S",
    "PING_TIMEOUT_S",
    "TIMEOUT_ENV",
    "Pinged",
    "is_loopback",
    "ping",
    "ping_logged",
    "ping_many",
    "timeout_seconds",
]

PING_TIMEOUT_S = 3.0
GRACE_S = 1.0  # beyond the socket timeout, for the whole request
TIMEOUT_ENV = "CROFT_NOTIFY_TIMEOUT_MS"


class Pinged:
    """What one ping got (a plain class: ``dataclasses`` would cost the idle tick ~15 ms to import)."""

    __slots__ = ("error", "http_status", "ok")

    def __init__(self, ok: bool, http_status: int | None = None, error: str | None = None) -> None:
        self.ok, self.http_status, self.error = ok, http_status, error

    def __repr__(self) -> str:
        return f"Pinged(ok={self.ok}, http_status={self.http_status}, error={self.error!r})"


def timeout_seconds(default: float) -> float:
    """``CROFT_NOTIFY_TIMEOUT_MS`` when set (webhook attempts and the ping share it), else ``default``."""
    configured = knobs.value(TIMEOUT_ENV)
    return default if configured is None else float(configured) / 1000


def is_loopback(url: str) -> bool:
    from urllib.parse import urlsplit  # lazy: see _simple

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return _loopback_host(host)


def _loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    import ipaddress  # lazy: a ping to an address with no proxy set never asks

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ping(url: str, timeout: float | None = None, body: bytes | None = None) -> Pinged:
    """GET ``url``: at most ``timeout`` seconds per socket wait (3 s, or less by the knob) and one more
    second in all; never raises.

    The socket timeout bounds each wait, not a name lookup that hangs nor a server that drips its
    answer a byte at a time, so the request runs in a daemon thread and the tick stops waiting at the
    deadline (the thread ends with the process)."""
    import threading  # lazy, as every import here: the per-user tick's pings may need none of them

    timeout = min(timeout_seconds(PING_TIMEOUT_S), PING_TIMEOUT_S) if timeout is None else timeout
    got: list[Pinged] = []
    worker = threading.Thread(
        target=lambda: got.append(_get(url, timeout, body=body)), name="croft-ping", daemon=True
    )
    worker.start()
    worker.join(timeout + GRACE_S)
    return got[0] if got else Pinged(False, None, f"no answer within {timeout + GRACE_S:g} s")


_OPENERS: dict[bool, Any] = {}
_PROXY_NAMES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_HEAD_MAX = 64 * 1024


def _opener(loopback: bool) -> Any:
    """One opener per kind for the process (a loopback URL skips the environment's proxies): building
    one per ping cost more than the ping itself when ``croft tick --all`` sends a hundred."""
    import urllib.request  # lazy: a plain http ping never needs it

    opener = _OPENERS.get(loopback)
    if opener is None:
        handlers = [urllib.request.ProxyHandler({})] if loopback else []
        opener = _OPENERS[loopback] = urllib.request.build_opener(*handlers)
    return opener


def _proxied() -> bool:
    """Whether the environment names an HTTP proxy (asked once per batch: six lookups a ping add up)."""
    return any(os.environ.get(name) for name in _PROXY_NAMES)


def _plain(url: str, proxied: bool | None = None) -> tuple[str, int, str, str] | None:
    """(host, port, Host header, request target) when ``url`` can go on a socket as it is: ``http://``,
    no credentials, and no proxy of the environment in the way (``proxied``: ``_proxied()``, asked by
    the caller); None: urllib's way."""
    plain = _simple(url)
    if plain is None:
        from urllib.parse import urlsplit  # lazy: see _simple

        try:
            parts = urlsplit(url)
            port = parts.port or 80
        except ValueError:
            return None
        if parts.scheme != "http" or not parts.hostname or parts.username or parts.password:
            return None
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        plain = parts.hostname, port, parts.netloc, target
    if (_proxied() if proxied is None else proxied) and not _loopback_host(plain[0]):
        return None
    return plain


_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")


def _simple(url: str) -> tuple[str, int, str, str] | None:
    """``_plain``'s answer for the usual ping URL, ``http://`` and a name or an IPv4 address, a port or
    none, a path: split here as ``urllib.parse.urlsplit`` splits it (a test compares), because
    ``urllib.parse`` brings ``re``, ``enum`` and ``ipaddress``, more than the per-user tick's idle
    minute costs without them. None for anything else (credentials, an IPv6 address, escapes, spaces, port
    0): ``urlsplit`` decides."""
    if not url.startswith("http://") or not url.isprintable() or " " in url:
        return None
    rest = url[7:]
    end = len(rest)
    for mark in "/?#":
        at = rest.find(mark)
        if 0 <= at < end:
            end = at
    netloc, tail = rest[:end], rest[end:]
    host, colon, port = netloc.partition(":")
    if not host or not _HOST_CHARS.issuperset(host):
        return None
    if colon and not (port.isdigit() and port.isascii() and 0 < int(port) <= 65535):
        return None
    tail = tail.partition("#")[0]
    path, _, query = tail.partition("?")
    return host.lower(), int(port) if colon else 80, netloc, (path or "/") + (f"?{query}" if query else "")


class _Late(TimeoutError):
    """The ping's whole bound ran out (an answer that drips in), not one socket wait."""


def _socket_get(plain: tuple[str, int, str, str], timeout: float, until: float | None) -> Pinged | None:
    """The GET on a socket: its status from the status line once every header has arrived, by the
    monotonic instant ``until`` when given (an answer that drips in is cut there). None for a redirect
    (urllib follows it). Raises OSError as a socket does."""
    import socket

    host, port, netloc, target = plain
    request = (
        f"GET {target} HTTP/1.1\r\nHost: {netloc}\r\nUser-Agent: {_user_agent()}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=timeout) as conn:
        conn.sendall(request.encode("latin-1"))
        head = b""
        while b"\r\n\r\n" not in head:
            if until is not None:
                left = until - time.monotonic()
                if left <= 0:
                    raise _Late("the answer did not end in time")
                conn.settimeout(min(timeout, left))
            chunk = conn.recv(4096)
            if not chunk or len(head) > _HEAD_MAX:
                raise ConnectionError("the answer ended before its headers did")
            head += chunk
    return _status(head)


def _get(url: str, timeout: float, until: float | None = None, body: bytes | None = None) -> Pinged:
    """One GET, or with ``body`` a POST of it as plain text (a run ping's failure carries its log tail);
    never raises. ``until``: the monotonic instant the whole answer must have come by (the socket path
    keeps it; ``ping`` bounds its thread instead)."""
    try:
        plain = _plain(url) if body is None else None  # a POST goes urllib's way
        if plain is not None:
            answered = _socket_get(plain, timeout, until)
            if answered is not None:
                return answered
        import urllib.error  # lazy, both: only for what a plain socket does not do
        import urllib.request

        headers = {"User-Agent": _agent()}
        if body is not None:
            headers["Content-Type"] = "text/plain; charset=utf-8"
        request = urllib.request.Request(
            url, data=body, method="GET" if body is None else "POST", headers=headers
        )
        try:
            with _opener(is_loopback(url)).open(request, timeout=timeout) as response:
                return Pinged(True, response.status)
        except urllib.error.HTTPError as exc:
            return Pinged(False, exc.code, f"HTTP {exc.code}")
    except (TimeoutError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            took = timeout + GRACE_S if isinstance(reason, _Late) else timeout
            return Pinged(False, None, f"no answer within {took:g} s")
        return Pinged(False, None, f"{type(reason).__name__}: {_scrubbed(reason, url)}")
    except Exception as exc:  # http.client's own errors (too many headers, a bad status line)
        return Pinged(False, None, f"{type(exc).__name__}: {_scrubbed(exc, url)}")


def _scrubbed(reason: object, url: str) -> str:
    """The reason's words with the URL said by its host only (a ping URL is its project's secret)."""
    from croft.notify.log import host_of  # lazy: a ping that answers loads no log, nor its pathlib

    return str(reason).replace(url, host_of(url))


def ping_logged(url: str, state_dir: str | os.PathLike[str], redactor: Any = None) -> bool:
    """Ping ``url``; a miss is one line in ``<state>/logs/notify.log``. Never raises; True when it answered.

    ``redactor`` is a no-argument callable returning the text redactor; it is called only on a miss, so
    the idle tick, which has no project loaded, reads ``.env`` only when there is something to log.
    """
    try:
        outcome = ping(url)
        error = outcome.error if not outcome.ok else None
    except (Exception, KeyboardInterrupt) as exc:
        error = f"{type(exc).__name__}: {exc}"
    return _told(url, state_dir, redactor, error)


def _told(url: str, state_dir: str | os.PathLike[str], redactor: Any, error: str | None) -> bool:
    """True for a ping that answered; a miss is logged (redacted when the project's redactor can be had)."""
    if error is None:
        return True
    from pathlib import Path  # lazy, both: only a miss is logged

    from croft.notify.log import host_of, log_miss

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


PING_THREADS = 8  # pings wait on the network, not the CPU: enough for a hundred answers of ~50 ms
PING_ROUNDS = 2
OPEN_AT_ONCE = 64  # sockets in flight side by side: far inside any open-file limit


def ping_many(targets: list[tuple[str, str | os.PathLike[str], Any]]) -> list[bool]:
    """Ping each ``(url, state folder, redactor)`` (``croft tick --all`` sends the minute's pings of every
    project at once), each within the bound ``ping`` keeps from the moment it begins (the socket timeout
    per wait, one more second in all), a miss logged as ``ping_logged`` logs it.

    A plain ``http://`` URL to an address (no name to look up, which no socket timeout bounds) goes on a
    non-blocking socket in this thread, ``OPEN_AT_ONCE`` side by side: a hundred pings cost a few
    milliseconds, with no thread each. The others (names, ``https://``, proxies, a redirect to follow)
    go to ``PING_THREADS`` threads that ping one after another. The batch ends after ``PING_ROUNDS`` of
    the bounds at most: a ping still going then is a miss in its project's notify.log, one not begun is
    "not sent", so an endpoint that hangs for everyone never holds the minute. Never raises; True for
    each ping that answered."""
    if not targets:
        return []
    timeout = min(timeout_seconds(PING_TIMEOUT_S), PING_TIMEOUT_S)
    bound = timeout + GRACE_S
    deadline = time.monotonic() + PING_ROUNDS * bound
    batch = _Batch(targets, timeout, deadline)
    direct = {}
    proxied = _proxied()
    for i, (url, _, _) in enumerate(targets):
        plain = _plain(url, proxied)
        if plain is not None and _literal(plain[0]):
            direct[i] = plain
    workers = batch.threads([i for i in range(len(targets)) if i not in direct])
    redirected = []
    for i, outcome in _side_by_side(direct, timeout, deadline).items():
        if outcome is None:  # a redirect: urllib follows it, below
            redirected.append(i)
        else:
            batch.settle(i, outcome)
    workers += batch.threads(redirected)
    while (alive := [w for w in workers if w.is_alive()]) and (now := time.monotonic()) < deadline:
        alive[0].join(min(deadline, batch.overdue(now, bound)) - now)
    return batch.close(PING_ROUNDS * bound)


class _Batch:
    """The outcomes of one ``ping_many``: which pings are settled (answered, or their miss logged),
    shared by the threads and the socket loop, so each ping is told exactly once."""

    def __init__(self, targets: list[tuple[str, Any, Any]], timeout: float, deadline: float) -> None:
        self.targets, self.timeout, self.deadline = targets, timeout, deadline
        self.answered = [False] * len(targets)
        self.settled = [False] * len(targets)
        self.begun: list[float | None] = [None] * len(targets)  # the monotonic instant each began
        self.lock: Any = contextlib.nullcontext()  # a real lock once there are threads (``threads``)

    def settle(self, i: int, outcome: Pinged) -> None:
        with self.lock:
            if self.settled[i]:  # given up on already: its miss is logged
                return
            self.settled[i] = True
        url, state_dir, redactor = self.targets[i]
        self.answered[i] = _told(url, state_dir, redactor, None if outcome.ok else outcome.error)

    def threads(self, queue: list[int]) -> list[Any]:
        """``PING_THREADS`` threads (or fewer) that take the pings of ``queue`` one after another."""
        if not queue:
            return []
        import threading  # lazy: a minute whose pings all go on sockets side by side starts none

        if isinstance(self.lock, contextlib.nullcontext):  # no thread runs yet: safe to swap
            self.lock = threading.Lock()
        queue = list(queue)

        def work() -> None:
            while True:
                with self.lock:
                    if not queue or time.monotonic() >= self.deadline:
                        return
                    i = queue.pop(0)
                    self.begun[i] = began = time.monotonic()
                url = self.targets[i][0]
                self.settle(i, _get(url, self.timeout, began + self.timeout + GRACE_S))

        workers = [
            threading.Thread(target=work, name="croft-pings", daemon=True)
            for _ in range(min(PING_THREADS, len(queue)))
        ]
        for worker in workers:
            worker.start()
        return workers

    def overdue(self, now: float, bound: float) -> float:
        """Settle as a miss each ping of a thread that began more than ``bound`` ago (urllib's request,
        which a slow answer can hold past its socket timeout); the instant the next one would be due."""
        with self.lock:
            running = [(i, at) for i, at in enumerate(self.begun) if at is not None and not self.settled[i]]
        for i, at in running:
            if now - at >= bound:
                self.settle(i, Pinged(False, None, f"no answer within {bound:g} s"))
        return min((at + bound for _, at in running if now - at < bound), default=now + bound)

    def close(self, waited: float) -> list[bool]:
        """Every ping not settled by now is a miss: "not sent" when it never began, else no answer."""
        with self.lock:
            left = [i for i, settled in enumerate(self.settled) if not settled]
            for i in left:
                self.settled[i] = True
        for i in left:
            url, state_dir, redactor = self.targets[i]
            why = (
                f"no answer when the minute's pings ended, after {waited:g} s"
                if self.begun[i] is not None
                else f"not sent: the minute's pings took more than {waited:g} s"
            )
            _told(url, state_dir, redactor, why)
        return self.answered


def _literal(host: str) -> bool:
    """Whether ``host`` is an address: connecting needs no name lookup (which no socket timeout bounds)."""
    import _socket  # see _side_by_side

    for family in (_socket.AF_INET, _socket.AF_INET6):
        try:
            _socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return True
    return False


def _side_by_side(
    plains: dict[int, tuple[str, int, str, str]], timeout: float, deadline: float
) -> dict[int, Pinged | None]:
    """The GETs of ``plains`` (addresses: no name to look up) on non-blocking sockets in this thread,
    ``OPEN_AT_ONCE`` at a time. Each keeps a ping's bound from its own start (``timeout`` per wait, one
    more second in all); none begins after ``deadline`` (those are left out of the answer). None for a
    redirect.

    The C modules ``_socket`` and ``select`` themselves: ``socket`` (its enums, and ``selectors``, which
    it imports) costs the per-user tick more to load than a hundred pings cost to send."""
    if not plains:
        return {}
    import _socket
    import errno
    import select

    out: dict[int, Pinged | None] = {}
    waiting = list(plains)
    waiting.reverse()  # popped from the end: the first begins first
    poller, wait, readable, writable = _poller(select)
    # fd -> [i, socket, bytes still to send, bytes received, last progress, the ping's own end]
    pending: dict[int, list[Any]] = {}
    started = (0, errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK)
    next_due = [deadline]  # no ping can be overdue before this instant (progress only moves it later)

    def begin(i: int) -> bool:
        """Open ``i``'s socket; False when no file descriptor is free while others are in flight (it
        waits for one of them to end)."""
        host, port, netloc, target = plains[i]
        request = (
            f"GET {target} HTTP/1.1\r\nHost: {netloc}\r\nUser-Agent: {_user_agent()}\r\n"
            "Connection: close\r\n\r\n"
        ).encode("latin-1")
        conn = None
        try:
            conn = _socket.socket(_socket.AF_INET6 if ":" in host else _socket.AF_INET, _socket.SOCK_STREAM)
            conn.setblocking(False)
            code = conn.connect_ex((host, port))
            if code not in started:
                raise OSError(code, os.strerror(code))
        except OSError as exc:
            if conn is not None:
                conn.close()
            if exc.errno in (errno.EMFILE, errno.ENFILE) and pending:
                return False
            out[i] = Pinged(False, None, f"{type(exc).__name__}: {exc}")
            return True
        at = time.monotonic()
        fd = conn.fileno()
        pending[fd] = [i, conn, request, b"", at, at + timeout + GRACE_S]
        next_due[0] = min(next_due[0], at + timeout)
        poller.register(fd, writable)
        return True

    def end(fd: int, outcome: Pinged | None) -> None:
        state = pending.pop(fd)
        poller.unregister(fd)
        state[1].close()
        out[state[0]] = outcome

    try:
        while waiting or pending:
            now = time.monotonic()
            while waiting and len(pending) < OPEN_AT_ONCE and now < deadline and begin(waiting[-1]):
                waiting.pop()
            if not pending:
                break
            if now >= next_due[0]:
                for fd, state in list(pending.items()):
                    if now >= state[5]:
                        end(fd, Pinged(False, None, f"no answer within {timeout + GRACE_S:g} s"))
                    elif now - state[4] >= timeout:
                        end(fd, Pinged(False, None, f"no answer within {timeout:g} s"))
                next_due[0] = min((min(s[4] + timeout, s[5]) for s in pending.values()), default=deadline)
                if not pending:
                    continue
            for fd, _ in wait(max(0.0, next_due[0] - now)):
                state = pending[fd]
                conn = state[1]
                try:
                    if state[2]:  # still sending: the socket is writable (connected) or has failed
                        error = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_ERROR)
                        if error:
                            raise OSError(error, os.strerror(error))
                        state[2] = state[2][conn.send(state[2]) :]
                        if not state[2]:
                            poller.modify(fd, readable)
                        state[4] = time.monotonic()
                        continue
                    chunk = conn.recv(4096)
                    if not chunk or len(state[3]) > _HEAD_MAX:
                        raise ConnectionError("the answer ended before its headers did")
                    state[3] += chunk
                    state[4] = time.monotonic()
                    if b"\r\n\r\n" in state[3]:
                        end(fd, _status(state[3]))
                except (OSError, ValueError) as exc:  # OSError(errno, text) is already the errno's own class
                    end(fd, Pinged(False, None, f"{type(exc).__name__}: {exc}"))
    finally:
        if hasattr(poller, "close"):  # an epoll is a file descriptor of its own
            poller.close()
    return out


def _poller(select: Any) -> tuple[Any, Any, int, int]:
    """(the poller, its wait in seconds, its readable and writable flags): ``select.epoll`` where there is
    one (Linux), since each ``poll`` call makes the kernel look at every socket in flight and each
    ``epoll`` call only at those that moved (a fifth of a minute's ping cost, for a hundred); else
    ``select.poll``, which waits in milliseconds."""
    if hasattr(select, "epoll"):
        try:
            poller = select.epoll()
        except OSError:  # no file descriptor free for it: poll needs none
            pass
        else:
            return poller, poller.poll, select.EPOLLIN, select.EPOLLOUT
    poller = select.poll()
    return poller, lambda seconds: poller.poll(seconds * 1000), select.POLLIN, select.POLLOUT


def _status(head: bytes) -> Pinged | None:
    """The ping's outcome from an answer's head; None for a redirect."""
    status = head.split(b"\r\n", 1)[0].split(None, 2)
    if len(status) < 2 or not status[0].startswith(b"HTTP/") or not status[1].isdigit():
        raise ValueError(f"not an HTTP answer: {head[:40]!r}")
    code = int(status[1])
    if 300 <= code < 400:
        return None
    return Pinged(True, code) if 200 <= code < 300 else Pinged(False, code, f"HTTP {code}")


def _agent() -> str:
    from croft import __version__

    return f"croft/{__version__}"


_AGENT: list[str] = []


def _user_agent() -> str:
    """``_agent()``, made once per process (the per-user tick asks for it a hundred times a minute)."""
    if not _AGENT:
        _AGENT.append(_agent())
    return _AGENT[0]
