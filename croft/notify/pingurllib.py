"""The pings a direct ``http.client`` connection does not send (``notify.ping``): through a proxy of the
environment, to a URL that is neither ``http://`` nor ``https://``, and after a redirect. They go through
``urllib.request``, which reads the proxies as every Python client does and follows a redirect wherever it
leads (a proxied host too).

A module of its own because ``urllib.request`` (and ``ipaddress``) costs more to import than the
``http.client`` a direct ping needs, and the OS job's minute pings its idle projects every minute:
``notify.ping`` loads this module only when the environment names a proxy (on macOS, whose proxies are
the system's, always) or an answer redirects.
"""

from __future__ import annotations

import ipaddress
import ssl
import threading
import urllib.error
import urllib.request
from http.client import HTTPMessage
from typing import IO
from urllib.parse import SplitResult, urlsplit

__all__ = ["Detour", "is_loopback"]


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


class Detour:
    """urllib's side of one batch of pings: the environment's proxies, read once, and an opener per kind
    of URL (proxied as the environment says, or a loopback one, never), sharing the batch's TLS context."""

    def __init__(self, tls: ssl.SSLContext | None) -> None:
        self.tls = tls
        self.proxies = urllib.request.getproxies()
        self._openers: dict[bool, urllib.request.OpenerDirector] = {}
        self._lock = threading.Lock()  # the batch's threads share it

    def proxied(self, url: str, parts: SplitResult) -> bool:
        """Whether urllib would send ``url`` through a proxy of the environment (a loopback URL: never)."""
        if parts.scheme not in self.proxies or is_loopback(url):
            return False
        return not urllib.request.proxy_bypass(parts.netloc.rpartition("@")[2])

    def send(
        self, url: str, method: str, headers: dict[str, str], body: bytes | None, timeout: float
    ) -> str | None:
        """One request urllib sends (through a proxy, or after a redirect, following any further one):
        None when it answered 2xx, else ``HTTP <status>``; raises what urllib raises."""
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with self._opener(url).open(request, timeout=timeout):
                return None  # urllib raises HTTPError for any answer but a 2xx
        except urllib.error.HTTPError as exc:
            exc.close()
            return f"HTTP {exc.code}"

    def _opener(self, url: str) -> urllib.request.OpenerDirector:
        """urllib's opener for ``url``: the environment's proxies, or none for a loopback URL. Each has
        handlers of its own, so a redirect is followed by the opener its handler belongs to."""
        loopback = is_loopback(url)
        with self._lock:
            if loopback not in self._openers:
                https = [urllib.request.HTTPSHandler(context=self.tls)] if self.tls is not None else []
                direct = [urllib.request.ProxyHandler({})] if loopback else []
                self._openers[loopback] = urllib.request.build_opener(_Redirects(), *https, *direct)
            return self._openers[loopback]
