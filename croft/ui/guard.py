"""Who may talk to the status page, decided without I/O: the server only asks.

The page is served on 127.0.0.1, but any web page the user visits can make the browser send requests
there, and a DNS name rebound to 127.0.0.1 can read the answers. So: the Host must name this loopback
port (else 421), a request must carry the session cookie the printed token was swapped for (else 403),
and a POST must also carry the CSRF token and an Origin of this very page (else 403).
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

__all__ = ["HEADERS", "Gate", "new_gate"]

# Sent with every response, errors and the event stream included. The page's only script and style are
# the files croft ships (/static/...); nothing else may load, frame it or be posted to.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
    " form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: under no-referrer a form POST carries "Origin: null", refused
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def _same(given: str | None, secret: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), secret.encode())


@dataclass(frozen=True)
class Gate:
    """The secrets of one running page: the token printed in its URL, the session the cookie holds and
    the CSRF token the page carries, each random and known only to this process and its user's browser."""

    port: int
    token: str = field(repr=False)
    session: str = field(repr=False)
    csrf: str = field(repr=False)

    @property
    def cookie_name(self) -> str:
        # Cookies ignore ports: two pages on two ports must not overwrite each other's session.
        return f"croft_ui_{self.port}"

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    def host_ok(self, host: str | None) -> bool:
        """Only this loopback port by name or number: anything else is a rebound name (421)."""
        return host is not None and host.lower() in self.hosts

    def token_ok(self, token: str | None) -> bool:
        return _same(token, self.token)

    def signed_in(self, cookie_header: str | None) -> bool:
        if not cookie_header:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(cookie_header)
        except CookieError:
            return False
        morsel = jar.get(self.cookie_name)
        return morsel is not None and _same(morsel.value, self.session)

    def set_cookie(self) -> str:
        return f"{self.cookie_name}={self.session}; HttpOnly; SameSite=Strict; Path=/"

    def post_refusal(self, origin: str | None, csrf: str | None) -> str | None:
        """Why a POST is refused, or None: its Origin must be this page and it must carry the CSRF token."""
        if origin is None or origin.lower() not in {f"http://{h}" for h in self.hosts}:
            return f"a POST must come from this page (Origin {origin or 'missing'})"
        if not _same(csrf, self.csrf):
            return "a POST must carry the page's CSRF token"
        return None


def new_gate(port: int) -> Gate:
    return Gate(port, secrets.token_urlsafe(24), secrets.token_urlsafe(32), secrets.token_urlsafe(32))
