"""``ctx.http``: httpx with croft's retries, Retry-After, redaction and one translation of httpx's errors.

An ingest calls ``ctx.http.get(url, params=..., headers=...)`` with httpx's own arguments and gets an
``httpx.Response``. This module decides what is worth trying again (network errors, timeouts, 429 and
5xx), how long to wait, and what the error looks like when it is not: always ``HTTP_ERROR`` with the
method, the URL with secrets hidden, the status and the start of the body. httpx's exceptions are
translated in exactly one place, :func:`translating`, and nowhere else in croft (the webhook aside).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, unquote_plus

import httpx

from croft.core.duration import words
from croft.core.problems import CroftError
from croft.core.redact import Redactor
from croft.core.retry_after import parse_retry_after

__all__ = [
    "BODY_CHARS",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "MAX_ANSWER_BYTES",
    "MAX_RETRY_AFTER",
    "TRANSLATIONS",
    "HttpClient",
    "default_backoff",
    "drop_none_params",
    "drop_secret_headers",
    "redact_url",
    "status_error",
    "translating",
]

DEFAULT_TIMEOUT = 30.0  # seconds per request (connect, read, write, pool each)
DEFAULT_MAX_RETRIES = 3  # retries after the first attempt, so four attempts at most
MAX_RETRY_AFTER = 300.0
MAX_REDIRECTS = 20  # as httpx's own default  # a server asking for a longer pause fails the step; the runner retries later
BODY_CHARS = 500  # how much of an error response's body goes into the problem
DEFAULT_DEADLINE = 300.0  # seconds for one whole attempt: its answer's headers and body, however they drip
MAX_ANSWER_BYTES = (
    256 * 1024 * 1024
)  # of one answer's (decoded) body; more is HTTP_ERROR, not a run that grows

# Query parameters whose values are credentials by their name alone, whatever .env says.
_SENSITIVE_PARAM = re.compile(
    r"token|secret|passw|pwd|api[-_.]?key|access[-_.]?key|private[-_.]?key|signature|credential"
    r"|^key$|[-_.]key$|^sig$|^auth(orization)?$",
    re.IGNORECASE,
)
_QUERY_PAIR = re.compile(r"(?P<lead>[?&;])(?P<name>[^=&#;?\s]+)=(?P<value>[^&#;\s]*)")
_USERINFO_PASSWORD = re.compile(r"(?P<lead>://[^/:@\s]*:)(?P<password>[^@/\s]+)@")

# httpx exception class -> (code, retryable, hint). Every public httpx exception has its own row so the
# choice is explicit; :func:`translating` walks the MRO, so a subclass a later httpx adds still lands on
# its nearest parent. Retrying is for faults that may pass on their own (the network, a slow or
# overloaded server); faults in the request itself (a bad URL, a scheme httpx cannot speak, malformed
# headers, a redirect loop) fail the same way every time.
_NETWORK = "The connection to the server broke. croft retried; if it keeps happening, check the network."
TRANSLATIONS: dict[type[Exception], tuple[str, bool, str]] = {
    httpx.HTTPError: ("HTTP_ERROR", False, "httpx could not complete the request."),
    httpx.RequestError: ("HTTP_ERROR", False, "httpx could not complete the request."),
    httpx.TransportError: ("HTTP_ERROR", True, _NETWORK),
    httpx.NetworkError: ("HTTP_ERROR", True, _NETWORK),
    httpx.ConnectError: (
        "HTTP_ERROR",
        True,
        "croft could not connect: check the host name and port in the URL and that the machine is online.",
    ),
    httpx.ReadError: ("HTTP_ERROR", True, _NETWORK),
    httpx.WriteError: ("HTTP_ERROR", True, _NETWORK),
    httpx.CloseError: ("HTTP_ERROR", True, _NETWORK),
    httpx.TimeoutException: (
        "HTTP_ERROR",
        True,
        "The server took too long. croft retried; pass timeout= (seconds) for an API known to be slow.",
    ),
    httpx.ConnectTimeout: (
        "HTTP_ERROR",
        True,
        "The server did not accept the connection in time: check the host and that it is reachable.",
    ),
    httpx.ReadTimeout: (
        "HTTP_ERROR",
        True,
        "The server accepted the request but did not answer in time. croft retried; pass timeout= (seconds)"
        " for an API known to be slow.",
    ),
    httpx.WriteTimeout: ("HTTP_ERROR", True, "Sending the request body took too long. croft retried."),
    httpx.PoolTimeout: ("HTTP_ERROR", True, "No connection became free in time. croft retried."),
    httpx.ProxyError: (
        "HTTP_ERROR",
        True,
        "The proxy refused or failed the request: check HTTP_PROXY / HTTPS_PROXY / ALL_PROXY.",
    ),
    httpx.ProtocolError: ("HTTP_ERROR", True, "The server broke the HTTP protocol. croft retried."),
    httpx.RemoteProtocolError: (
        "HTTP_ERROR",
        True,
        "The server closed the connection or sent a malformed answer. croft retried.",
    ),
    httpx.LocalProtocolError: (
        "HTTP_ERROR",
        False,
        "The request could not be sent as HTTP: check the headers and body the asset passes.",
    ),
    httpx.UnsupportedProtocol: (
        "HTTP_ERROR",
        False,
        "The URL needs to start with http:// or https://.",
    ),
    httpx.TooManyRedirects: (
        "HTTP_ERROR",
        False,
        "The server redirects in a loop: open the URL in a browser, or pass follow_redirects=False.",
    ),
    httpx.DecodingError: (
        "HTTP_ERROR",
        False,
        "The server's answer could not be decoded as its Content-Encoding says.",
    ),
    httpx.HTTPStatusError: ("HTTP_ERROR", False, "The server answered with an error status."),
    # A malformed URL is a fault of the request, not of the network: never retried. HTTP_ERROR rather than
    # ASSET_CODE_ERROR because the URL is often the API's own (a next-page link), and the user needs the
    # same method + URL details as for any other failed request.
    httpx.InvalidURL: ("HTTP_ERROR", False, "The URL is malformed: check how the asset builds it."),
    # These two only happen when asset code uses httpx's objects in a way httpx forbids.
    httpx.CookieConflict: (
        "ASSET_CODE_ERROR",
        False,
        "More than one cookie matches that name: pass domain= and path= when reading cookies.",
    ),
    httpx.StreamError: (
        "ASSET_CODE_ERROR",
        False,
        "A response or request body was used after it was read or closed: read the body once.",
    ),
    httpx.StreamConsumed: (
        "ASSET_CODE_ERROR",
        False,
        "A request body that is a generator can be sent only once: pass bytes, json= or data= instead.",
    ),
    httpx.StreamClosed: ("ASSET_CODE_ERROR", False, "The response was closed before its body was read."),
    httpx.ResponseNotRead: ("ASSET_CODE_ERROR", False, "Read the response body before using .content."),
    httpx.RequestNotRead: ("ASSET_CODE_ERROR", False, "Read the request body before using .content."),
}
_TRANSLATED = tuple(TRANSLATIONS)


def default_backoff(attempt: int) -> float:
    """Seconds before retry number ``attempt`` (1, 2, 4, ... capped at 30). Deterministic on purpose:
    one user's laptop is no thundering herd, and predictable waits make logs and tests readable."""
    return float(min(2 ** (attempt - 1), 30))


def drop_none_params(params: Any) -> Any:
    """Drop query values that are None, so ``params={"since": ctx.since}`` works on a first run."""
    if params is None or isinstance(params, str | bytes | httpx.QueryParams):
        return params
    if isinstance(params, Mapping):
        out: dict[Any, Any] = {}
        for name, value in params.items():
            if isinstance(value, list | tuple):
                value = [v for v in value if v is not None]
                if not value:
                    continue
            elif value is None:
                continue
            out[name] = value
        return out
    return [(name, value) for name, value in params if value is not None]


def redact_url(text: str, redactor: Redactor | None = None) -> str:
    """Hide secrets in a URL (or any text holding URLs): .env values, credential query values, passwords.

    .env values become ``[redacted:NAME]`` also when they appear percent-encoded; values of query
    parameters named like a credential (token, api_key, secret, ...) and a password in ``user:pw@host``
    become ``[redacted]``.
    """
    if redactor:
        text = redactor.text(text)
        decoded = unquote(text)
        if decoded != text and redactor.text(decoded) != decoded:
            text = redactor.text(decoded)

    def hide(match: re.Match[str]) -> str:
        name, value = match["name"], match["value"]
        if value and not value.startswith("[redacted") and _SENSITIVE_PARAM.search(unquote_plus(name)):
            value = "[redacted]"
        return f"{match['lead']}{name}={value}"

    text = _QUERY_PAIR.sub(hide, text)
    return _USERINFO_PASSWORD.sub(lambda m: f"{m['lead']}[redacted]@", text)


def _status_hint(status: int, retries: int, retry_after: float | None, max_retry_after: float) -> str:
    if retry_after is not None and retry_after > max_retry_after:
        return (
            f"The server asked croft to wait {words(retry_after)} before trying again, longer than"
            f" the {words(max_retry_after)} croft waits inside a step; a later run can try again."
        )
    tried = f"croft retried {retries} time{'s' if retries != 1 else ''}"
    if status in (401, 403):
        return (
            "The server refused the credentials: check the secret the asset sends (its value in .env)"
            " and that it is allowed to read this URL."
        )
    if status == 404:
        return "The server has nothing at this URL: check the URL, its path and any ids in it."
    if status == 429:
        return f"The server is rate limiting croft ({tried}). A later run can try again."
    if status >= 500:
        return f"The server is struggling ({tried}). A later run can try again."
    return (
        "The server rejected the request: compare the query, headers and body the asset sends with the"
        " API's documentation (details.body has the server's answer)."
    )


def status_error(
    method: str,
    url: str,
    response: httpx.Response,
    *,
    attempts: int,
    retry_after: float | None = None,
    max_retry_after: float = MAX_RETRY_AFTER,
    redactor: Redactor | None = None,
) -> CroftError:
    """The HTTP_ERROR for a final status >= 400 (``url`` already redacted). 429 and 5xx are retryable."""
    status = response.status_code
    body = response.text
    if redactor:
        body = redactor.text(body)
    details: dict[str, Any] = {
        "method": method,
        "url": url,
        "status": status,
        "attempts": attempts,
        "body": body[:BODY_CHARS],
    }
    if retry_after is not None:
        details["retryAfterMs"] = round(retry_after * 1000)
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    return CroftError(
        "HTTP_ERROR",
        f"{method} {url} returned {status}{reason}",
        _status_hint(status, attempts - 1, retry_after, max_retry_after),
        details=details,
        retryable=status == 429 or status >= 500,
    )


@contextmanager
def translating(
    method: str, url: str, shown: str, *, attempts: int, redactor: Redactor | None = None
) -> Iterator[None]:
    """Turn any httpx exception raised inside into a CroftError, chosen by the most specific mapped class.

    ``url`` is the URL as sent (replaced by ``shown``, its redacted form, wherever httpx quoted it).
    The error keeps the httpx class name in ``details.error`` and is raised ``from`` the original.
    """
    try:
        yield
    except _TRANSLATED as exc:
        mapped = next(klass for klass in type(exc).__mro__ if klass in TRANSLATIONS)
        code, retryable, hint = TRANSLATIONS[mapped]
        if isinstance(exc, httpx.HTTPStatusError):
            retryable = exc.response.status_code == 429 or exc.response.status_code >= 500
        reason = redact_url(str(exc).replace(url, shown), redactor) or type(exc).__name__
        name = type(exc).__name__
        raise CroftError(
            code,
            f"{method} {shown} failed: {name}: {reason}",
            hint,
            details={"method": method, "url": shown, "attempts": attempts, "error": name, "reason": reason},
            retryable=retryable,
        ) from exc


class Bound:
    """One attempt's limits: a whole deadline (from now) and the most of an answer's body read."""

    def __init__(self, deadline: float, max_bytes: int, shown: str):
        self.until = time.monotonic() + deadline
        self.deadline, self.max_bytes, self.shown = deadline, max_bytes, shown

    def read(self, response: httpx.Response) -> httpx.Response:
        """The streamed ``response`` read into memory, within the limits (else closed, and an error)."""
        chunks: list[bytes] = []
        size = 0
        try:
            if time.monotonic() > self.until:
                raise self._late()
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_bytes:
                    raise CroftError(
                        "HTTP_ERROR",
                        f"{response.request.method} {self.shown}: the answer is larger than"
                        f" {self.max_bytes:,} bytes; croft stopped reading it",
                        "Ask the API for less at a time (a page size, a date range), or pass"
                        " max_bytes= (bytes) to ctx.http for an answer known to be this large.",
                        details={"url": self.shown, "maxBytes": self.max_bytes, "error": "TooLarge"},
                    )
                chunks.append(chunk)
                if time.monotonic() > self.until:
                    raise self._late()
        finally:
            response.close()
        response._content = b"".join(chunks)  # what .content, .text and .json() read, as httpx's read() sets
        return response

    def _late(self) -> CroftError:
        return CroftError(
            "HTTP_ERROR",
            f"{self.shown}: the whole answer did not come within {self.deadline:g} s",
            "The server sends its answer too slowly or without end. croft retried; pass deadline= (seconds)"
            " to ctx.http for an API known to take longer.",
            details={"url": self.shown, "deadline": self.deadline, "error": "DeadlineExceeded"},
            retryable=True,
        )


class HttpClient:
    """What ingests get as ``ctx.http``: get/post/request with httpx's arguments, returning httpx.Response.

    Extra keyword arguments on top of httpx's: ``query=`` (an alias of ``params=``), ``retries=`` (this
    call's retry budget), ``deadline=`` (seconds one whole attempt may take, the body included: httpx's
    timeout bounds each wait only) and ``max_bytes=`` (the most of an answer's body read). The clock for
    sleeping is injected (``sleep``) so tests never wait.
    """

    def __init__(
        self,
        *,
        redactor: Redactor | None = None,
        log: Callable[[str], None] | None = None,
        on_progress: Callable[[], None] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        backoff: Callable[[int], float] = default_backoff,
        max_retry_after: float = MAX_RETRY_AFTER,
        transport: httpx.BaseTransport | None = None,
    ):
        self._redactor = redactor
        self._log = log or (lambda line: None)
        self._on_progress = on_progress or (lambda: None)
        self._max_retries = max_retries
        self._sleep = sleep
        self._backoff = backoff
        self._max_retry_after = max_retry_after
        self._client = httpx.Client(timeout=timeout, transport=transport, follow_redirects=True)
        self.requests = 0  # completed requests (any status), for run reports

    def get(self, url: httpx.URL | str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: httpx.URL | str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def request(self, method: str, url: httpx.URL | str, **kwargs: Any) -> httpx.Response:
        method = method.upper()
        retries = kwargs.pop("retries", None)
        max_retries = self._max_retries if retries is None else retries
        deadline = float(kwargs.pop("deadline", None) or DEFAULT_DEADLINE)
        max_bytes = int(kwargs.pop("max_bytes", None) or MAX_ANSWER_BYTES)
        params = self._params(kwargs)
        raw = str(url)
        attempt = 0
        while True:
            attempt += 1
            shown = redact_url(raw, self._redactor)
            started = time.perf_counter()
            try:
                with translating(method, raw, shown, attempts=attempt, redactor=self._redactor):
                    target = httpx.URL(url)
                    if params is not None:
                        target = target.copy_merge_params(params)
                    raw = str(target)
                    shown = redact_url(raw, self._redactor)
                    response = self._send(method, target, kwargs, Bound(deadline, max_bytes, shown))
            except CroftError as error:
                name = (error.problem.details or {}).get("error", "error")
                self._log(f"{method} {shown} -> {name} ({_ms(started)} ms)")
                if not error.retryable or attempt > max_retries:
                    raise
                self._wait(self._backoff(attempt), name)
                continue
            self.requests += 1
            self._log(f"{method} {shown} -> {response.status_code} ({_ms(started)} ms)")
            self._on_progress()
            status = response.status_code
            if status < 400:
                return response
            retryable = status == 429 or status >= 500
            retry_after = parse_retry_after(response.headers.get("Retry-After")) if retryable else None
            too_long = retry_after is not None and retry_after > self._max_retry_after
            if retryable and not too_long and attempt <= max_retries:
                self._wait(self._backoff(attempt) if retry_after is None else retry_after, str(status))
                continue
            raise status_error(
                method,
                shown,
                response,
                attempts=attempt,
                retry_after=retry_after,
                max_retry_after=self._max_retry_after,
                redactor=self._redactor,
            )

    def _send(self, method: str, target: httpx.URL, kwargs: dict[str, Any], bound: Bound) -> httpx.Response:
        """Send, following redirects here rather than in httpx, so a hop to another origin never carries a
        header holding a secret (Authorization, Cookie, a credential-named header, or any .env value)."""
        options = dict(kwargs)
        follow = options.pop("follow_redirects", True)
        auth = options.pop("auth", httpx.USE_CLIENT_DEFAULT)
        request = self._client.build_request(method, target, **options)
        response = bound.read(self._client.send(request, auth=auth, stream=True, follow_redirects=False))
        origin = _origin(response.request.url)
        hops = 0
        while follow and response.next_request is not None:
            hops += 1
            if hops > MAX_REDIRECTS:
                raise httpx.TooManyRedirects("Exceeded maximum allowed redirects.", request=response.request)
            following, before = response.next_request, response.request.headers
            response.close()
            if _origin(following.url) != origin:
                dropped = drop_secret_headers(following.headers, self._redactor)
                dropped += [  # the ones httpx itself already left out (Authorization, Cookie)
                    name
                    for name, value in before.items()
                    if name not in following.headers
                    and name not in dropped
                    and _carries_secret(name, value, self._redactor)
                ]
                if dropped:
                    shown = redact_url(str(following.url), self._redactor)
                    self._log(f"redirect to another origin ({shown}): not forwarding {', '.join(dropped)}")
            response = bound.read(self._client.send(following, stream=True, follow_redirects=False))
        return response

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _params(self, kwargs: dict[str, Any]) -> Any:
        if "query" in kwargs:
            if "params" in kwargs:
                raise CroftError(
                    "ASSET_CODE_ERROR",
                    "ctx.http was given both params= and query=",
                    "Pass the query values once, as params= (query= is only another name for it).",
                )
            kwargs["params"] = kwargs.pop("query")
        return drop_none_params(kwargs.pop("params", None))

    def _wait(self, seconds: float, after: str) -> None:
        self._log(f"retrying in {seconds:.1f} s after {after}")
        self._sleep(seconds)


# Headers that carry credentials by their name alone; any header holding a .env value is dropped too.
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_SECRET_HEADER_NAME = re.compile(r"auth|token|secret|passw|api[-_]?key|session|credential|signature", re.I)


def drop_secret_headers(headers: httpx.Headers, redactor: Redactor | None) -> list[str]:
    """Remove every header of ``headers`` that carries a secret; return the names removed (for the log)."""
    dropped = [name for name, value in headers.items() if _carries_secret(name, value, redactor)]
    for name in dropped:
        del headers[name]
    return dropped


def _carries_secret(name: str, value: str, redactor: Redactor | None) -> bool:
    return (
        name.lower() in _SECRET_HEADERS
        or _SECRET_HEADER_NAME.search(name) is not None
        or (redactor is not None and redactor.text(value) != value)
    )


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host, url.port or default)


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
