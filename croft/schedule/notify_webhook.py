"""The webhook POST and the dead-man's ping, over httpx. Imported only when one of them is configured.

A webhook gets 3 attempts with a short backoff (raised to the server's Retry-After, capped), retried on
network errors, timeouts, 429 and 5xx only: any other 4xx says the receiver will never take this body.
Outcomes are returned, never raised; error texts carry the URL's host only.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from croft.engine import settings
from croft.engine.http import parse_retry_after
from croft.schedule.notify_log import host_of, scrub_urls

__all__ = [
    "ATTEMPTS",
    "Delivery",
    "ping",
    "post",
    "sign",
    "timeout_seconds",
]

ATTEMPTS = 3
BACKOFF_S = (1.0, 4.0)
MAX_RETRY_AFTER_S = 30.0
DEFAULT_TIMEOUT_S = 10.0
PING_TIMEOUT_S = 3.0
TIMEOUT_ENV = "CROFT_NOTIFY_TIMEOUT_MS"


@dataclass(frozen=True)
class Delivery:
    """``sent`` or ``failed``; ``http_status`` of the last answer; ``error`` a one-line reason."""

    status: str
    attempts: int
    http_status: int | None = None
    error: str | None = None


def timeout_seconds(default: float = DEFAULT_TIMEOUT_S) -> float:
    """``CROFT_NOTIFY_TIMEOUT_MS`` replaces the 10 s each webhook attempt (and the ping) may take."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        return max(0.05, int(raw) / 1000) if raw else default
    except ValueError:
        return default


def sign(secret: str, body: bytes) -> str:
    """``sha256=<hex HMAC-SHA256 of the raw body>``: the X-Croft-Signature header."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _client(url: str, timeout: float) -> httpx.Client:
    """Loopback receivers bypass any HTTP proxy of the environment; others use it as usual."""
    return httpx.Client(
        timeout=httpx.Timeout(timeout), trust_env=not _is_loopback(url), follow_redirects=False
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
    """POST ``body`` up to 3 times; never raises. Waits go through ``engine.settings.pause`` by default,
    the one seam where tests record waits instead of sleeping."""
    timeout = timeout_seconds() if timeout is None else timeout
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
                (sleep or settings.pause)(wait)
    return Delivery("failed", ATTEMPTS, status, f"gave up after {ATTEMPTS} attempts: {error}")


def ping(url: str, *, timeout: float | None = None) -> Delivery:
    """One GET, a few seconds at most (connect and answer each get the ping's timeout); never raises."""
    timeout = min(timeout_seconds(PING_TIMEOUT_S), PING_TIMEOUT_S) if timeout is None else timeout
    try:
        with httpx.Client(
            timeout=httpx.Timeout(timeout), trust_env=not _is_loopback(url), follow_redirects=True
        ) as client:
            response = client.get(url)
    except Exception as exc:
        return Delivery("failed", 1, None, _why(exc, url, timeout))
    if response.status_code >= 400:
        return Delivery("failed", 1, response.status_code, f"HTTP {response.status_code}")
    return Delivery("sent", 1, response.status_code)
