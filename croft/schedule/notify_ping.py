"""The dead-man's-switch ping: one GET after each completed project tick, with the standard library only.

It runs on the every-minute tick path, which must not import httpx (nor click, which httpx pulls in), so
this is ``urllib.request``: a few milliseconds to load instead of a tenth of a second. A loopback URL
bypasses any HTTP proxy of the environment, as the webhook does.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from dataclasses import dataclass

from croft.schedule.notify_log import host_of

__all__ = ["PING_TIMEOUT_S", "TIMEOUT_ENV", "Pinged", "is_loopback", "ping", "timeout_seconds"]

PING_TIMEOUT_S = 3.0
TIMEOUT_ENV = "CROFT_NOTIFY_TIMEOUT_MS"


@dataclass(frozen=True)
class Pinged:
    ok: bool
    http_status: int | None = None
    error: str | None = None


def timeout_seconds(default: float) -> float:
    """``CROFT_NOTIFY_TIMEOUT_MS`` when set (webhook attempts and the ping share it), else ``default``."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        return max(0.05, int(raw) / 1000) if raw else default
    except ValueError:
        return default


def is_loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

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


def ping(url: str, timeout: float | None = None) -> Pinged:
    """GET ``url``, at most ``timeout`` seconds per socket wait (3 s, or less by the knob); never raises."""
    timeout = min(timeout_seconds(PING_TIMEOUT_S), PING_TIMEOUT_S) if timeout is None else timeout
    handlers = [urllib.request.ProxyHandler({})] if is_loopback(url) else []
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, method="GET", headers={"User-Agent": _agent()})
    try:
        with opener.open(request, timeout=timeout) as response:
            return Pinged(True, response.status)
    except urllib.error.HTTPError as exc:
        return Pinged(False, exc.code, f"HTTP {exc.code}")
    except (TimeoutError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return Pinged(False, None, f"no answer within {timeout:g} s")
        text = str(reason).replace(url, host_of(url))
        return Pinged(False, None, f"{type(reason).__name__}: {text}")


def _agent() -> str:
    from croft import __version__

    return f"croft/{__version__}"
