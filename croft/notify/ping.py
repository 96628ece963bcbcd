"""The dead-man's-switch ping: one GET after each completed project tick, with the standard library only.

It runs on the every-minute tick path, which must not import httpx (nor click, which httpx pulls in), so
this is ``urllib.request``: a few milliseconds to load instead of a tenth of a second. A loopback URL
bypasses any HTTP proxy of the environment, as the webhook does.
"""

from __future__ import annotations

import ipaddress
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from croft.core import knobs
from croft.notify.log import host_of, log_miss

TYPE_CHECKING = False  # the idle tick loads this module when a ping is configured: no typing on that path
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


def ping(url: str, timeout: float | None = None, body: bytes | None = None) -> Pinged:
    """GET ``url``: at most ``timeout`` seconds per socket wait (3 s, or less by the knob) and one more
    second in all; never raises.

    The socket timeout bounds each wait, not a name lookup that hangs nor a server that drips its
    answer a byte at a time, so the request runs in a daemon thread and the tick stops waiting at the
    deadline (the thread ends with the process)."""
    timeout = min(timeout_seconds(PING_TIMEOUT_S), PING_TIMEOUT_S) if timeout is None else timeout
    got: list[Pinged] = []
    worker = threading.Thread(
        target=lambda: got.append(_get(url, timeout, body)), name="croft-ping", daemon=True
    )
    worker.start()
    worker.join(timeout + GRACE_S)
    return got[0] if got else Pinged(False, None, f"no answer within {timeout + GRACE_S:g} s")


def _get(url: str, timeout: float, body: bytes | None = None) -> Pinged:
    """A GET, or with ``body`` a POST of it as plain text (a run ping's failure carries its log tail)."""
    try:
        handlers = [urllib.request.ProxyHandler({})] if is_loopback(url) else []
        opener = urllib.request.build_opener(*handlers)
        headers = {"User-Agent": _agent()}
        if body is not None:
            headers["Content-Type"] = "text/plain; charset=utf-8"
        request = urllib.request.Request(
            url, data=body, method="GET" if body is None else "POST", headers=headers
        )
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
    except Exception as exc:  # http.client's own errors (too many headers, a bad status line)
        return Pinged(False, None, f"{type(exc).__name__}: {str(exc).replace(url, host_of(url))}")


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
        log_miss(Path(state_dir), None, f"ping {host_of(url)}: failed")
    return False


def _agent() -> str:
    from croft import __version__

    return f"croft/{__version__}"
