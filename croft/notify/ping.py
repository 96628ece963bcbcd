"""The dead-man's-switch ping and the run pings, over ``urllib.request``.

The standard library's client, not httpx: ``croft tick --all`` sends the minute's pings of every
project with one, and httpx alone costs that minute several times what urllib does to import. urllib
gives what a ping needs: the environment's proxies (a loopback URL bypasses them, as the webhook's
does), ``https://``, redirects. Every ping keeps the notifiers' bounds (``notify.deadline``): a socket
timeout per wait, a whole deadline, and no body read, a redirect's included.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from functools import partial
from http.client import HTTPMessage
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from croft import __version__
from croft.notify.deadline import Late, Unbegun, each_within, timeout_seconds, within
from croft.notify.log import host_of, log_miss, scrub_urls

__all__ = [
    "AT_ONCE",
    "GRACE_S",
    "PING_TIMEOUT_S",
    "is_loopback",
    "ping",
    "ping_logged",
    "ping_many",
]

PING_TIMEOUT_S = 3.0
GRACE_S = 1.0  # beyond the socket timeout, for the whole request (or the whole minute's batch)
AT_ONCE = 16  # pings in flight side by side: they wait on the network, and each holds a socket
AGENT = f"croft/{__version__}"


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (``localhost`` or a loopback address): no proxy applies."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect as urllib does, with its body closed unread (urllib would read all of it)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            fp.close()  # what urllib reads next is what is left of a closed answer: nothing
        return new


def _openers(urls: Sequence[str]) -> dict[bool, urllib.request.OpenerDirector]:
    """The openers of a batch, by whether the URL is a loopback one (it skips the environment's
    proxies). Made per batch, since urllib reads the proxies when an opener is built; with one TLS
    context for every ``https://`` ping of it, which urllib would otherwise load the system's
    certificates for once per ping."""
    tls = ssl.create_default_context() if any(url[:6].lower() == "https:" for url in urls) else None

    def opener(*extra: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
        """Handlers of its own: a redirect is followed by the opener its handler belongs to."""
        https = [urllib.request.HTTPSHandler(context=tls)] if tls is not None else []
        return urllib.request.build_opener(_Redirects(), *https, *extra)

    return {False: opener(), True: opener(urllib.request.ProxyHandler({}))}


def _get(url: str, timeout: float, body: bytes | None, opener: urllib.request.OpenerDirector) -> str | None:
    """One GET, or with ``body`` a POST of it as plain text (a run ping's failure carries its log tail),
    the answer's body never read: None when it answered 2xx, else why not, in one line; never raises."""
    headers = {"User-Agent": AGENT}
    if body is not None:
        headers["Content-Type"] = "text/plain; charset=utf-8"
    try:
        request = urllib.request.Request(
            url, data=body, method="GET" if body is None else "POST", headers=headers
        )
        with opener.open(request, timeout=timeout):
            return None  # urllib raises HTTPError for any answer but a 2xx
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"HTTP {exc.code}"
    except Exception as exc:  # urllib's URLError, a socket's OSError, http.client's own (a bad status line)
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
    opener = _openers([url])[is_loopback(url)]
    try:
        return within(timeout + GRACE_S, lambda: _get(url, timeout, body, opener))
    except Late:
        return f"no answer within {timeout + GRACE_S:g} s"


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


def ping_many(targets: Sequence[tuple[str, str | os.PathLike[str], Any]]) -> list[bool]:
    """Ping each ``(url, state folder, redactor)``: ``croft tick --all`` sends the minute's pings of every
    project at once, ``AT_ONCE`` in flight side by side, all within one deadline (the socket timeout and
    one more second), so an endpoint that hangs for everyone never holds the minute. A miss is logged as
    ``ping_logged`` logs it: one still going at the deadline is "no answer", one not begun "not sent".
    Never raises; True for each ping that answered."""
    timeout = _timeout()
    bound = timeout + GRACE_S
    openers = _openers([url for url, _, _ in targets])
    works = [partial(_get, url, timeout, None, openers[is_loopback(url)]) for url, _, _ in targets]
    answered = []
    for (url, state_dir, redactor), outcome in zip(targets, each_within(bound, works, AT_ONCE), strict=True):
        if isinstance(outcome, Unbegun):
            error: str | None = f"not sent: the minute's pings took more than {bound:g} s"
        elif isinstance(outcome, Late):
            error = f"no answer within {bound:g} s"
        else:
            error = outcome
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
