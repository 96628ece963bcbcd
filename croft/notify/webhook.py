"""The webhook POST, over httpx. Imported only when a webhook is configured and there is something to send.

A webhook gets 3 attempts with a short backoff (raised to the server's Retry-After, capped), retried on
network errors, timeouts, 429 and 5xx only: any other 4xx says the receiver will never take this body.
Outcomes are returned, never raised; error texts carry the URL's host only. Each attempt has a whole
deadline (``notify.deadline``: the socket timeout plus a grace) and reads the answer's status and
headers only, never its body: a receiver streaming an endless answer costs nothing but that deadline.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from croft.core import clock
from croft.core.retry_after import parse_retry_after
from croft.notify.deadline import Late, timeout_seconds, within
from croft.notify.log import host_of, scrub_urls
from croft.notify.pingurllib import is_loopback

__all__ = ["ATTEMPTS", "Delivery", "post", "sign"]

ATTEMPTS = 3
BACKOFF_S = (1.0, 4.0)
MAX_RETRY_AFTER_S = 30.0
DEFAULT_TIMEOUT_S = 10.0
GRACE_S = 2.0  # beyond the socket timeout, for one whole attempt


@dataclass(frozen=True)
class Delivery:
    """``sent`` or ``failed``; ``http_status`` of the last answer; ``error`` a one-line reason."""

    status: str
    attempts: int
    http_status: int | None = None
    error: str | None = None


def sign(secret: str, body: bytes) -> str:
    """``sha256=<hex HMAC-SHA256 of the raw body>``: the X-Croft-Signature header."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def _client(url: str, timeout: float) -> httpx.Client:
    """Loopback receivers bypass any HTTP proxy of the environment; others use it as usual."""
    return httpx.Client(
        timeout=httpx.Timeout(timeout), trust_env=not is_loopback(url), follow_redirects=False
    )


def _answer(
    client: httpx.Client, url: str, body: bytes, headers: Mapping[str, str]
) -> tuple[int, str | None]:
    """One POST: the answer's status and Retry-After, its body never read (closing the stream drops it)."""
    with client.stream("POST", url, content=body, headers=dict(headers)) as response:
        return response.status_code, response.headers.get("retry-after")


def _why(exc: BaseException, url: str, timeout: float) -> str:
    if isinstance(exc, Late):
        return str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout:g} s ({type(exc).__name__})"
    text = str(exc).replace(url, host_of(url))
    return f"{type(exc).__name__}: {scrub_urls(text)}".strip()


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout: float | None = None,
    sleep: Callable[[float], None] | None = None,
) -> Delivery:
    """POST ``body`` up to 3 times; never raises. Waits go through ``core.clock.pause`` by default,
    the one seam where tests record waits instead of sleeping."""
    timeout = timeout_seconds(DEFAULT_TIMEOUT_S) if timeout is None else timeout
    status: int | None = None
    error = "not sent"
    try:
        client = _client(url, timeout)
    except Exception as exc:
        return Delivery("failed", 0, None, _why(exc, url, timeout))
    with client:
        for attempt in range(1, ATTEMPTS + 1):
            wait = BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)]
            try:
                status, retry_after = within(timeout + GRACE_S, lambda: _answer(client, url, body, headers))
            except Exception as exc:  # network errors and timeouts: retried
                error, status = _why(exc, url, timeout), None
            else:
                if status < 300:
                    return Delivery("sent", attempt, status)
                if status != 429 and status < 500:
                    return Delivery("failed", attempt, status, f"HTTP {status} (not retried)")
                error = f"HTTP {status}"
                asked = parse_retry_after(retry_after)
                if asked is not None:
                    wait = max(wait, min(asked, MAX_RETRY_AFTER_S))
            if attempt < ATTEMPTS:
                (sleep or clock.pause)(wait)
    return Delivery("failed", ATTEMPTS, status, f"gave up after {ATTEMPTS} attempts: {error}")
