"""The webhook POST, over httpx. Imported only when a webhook is configured and there is something to send.

A webhook gets 3 attempts with a short backoff (raised to the server's Retry-After, capped), retried on
network errors, timeouts, 429 and 5xx only: any other 4xx says the receiver will never take this body.
Outcomes are returned, never raised; error texts carry the URL's host only.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from croft.core import clock
from croft.core.retry_after import parse_retry_after
from croft.notify.log import host_of, scrub_urls
from croft.notify.ping import is_loopback, timeout_seconds

__all__ = ["ATTEMPTS", "Delivery", "post", "sign"]

ATTEMPTS = 3
BACKOFF_S = (1.0, 4.0)
MAX_RETRY_AFTER_S = 30.0
DEFAULT_TIMEOUT_S = 10.0


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


def _why(exc: Exception, url: str, timeout: float) -> str:
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
                response = client.post(url, content=body, headers=dict(headers))
            except Exception as exc:  # network errors and timeouts: retried
                error, status = _why(exc, url, timeout), None
            else:
                status = response.status_code
                if status < 300:
                    return Delivery("sent", attempt, status)
                if status != 429 and status < 500:
                    return Delivery("failed", attempt, status, f"HTTP {status} (not retried)")
                error = f"HTTP {status}"
                asked = parse_retry_after(response.headers.get("retry-after"))
                if asked is not None:
                    wait = max(wait, min(asked, MAX_RETRY_AFTER_S))
            if attempt < ATTEMPTS:
                (sleep or clock.pause)(wait)
    return Delivery("failed", ATTEMPTS, status, f"gave up after {ATTEMPTS} attempts: {error}")
