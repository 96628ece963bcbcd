"""ctx.http against a real local server: retries, Retry-After, errors, redaction, and httpx's exceptions."""

from __future__ import annotations

import inspect
import re
import socket
import threading
from datetime import UTC, datetime

import httpx
import pytest
from httpserver import TestServer, serve

from croft.core.problems import CroftError
from croft.core.redact import Redactor
from croft.core.retry_after import parse_retry_after
from croft.engine import http as http_module
from croft.engine.http import (
    TRANSLATIONS,
    HttpClient,
    default_backoff,
    drop_none_params,
    redact_url,
    translating,
)


class Recorder:
    """Stands in for time.sleep and for the step log, so tests see waits and lines without waiting."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.lines: list[str] = []
        self.progress = 0

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def log(self, line: str) -> None:
        self.lines.append(line)

    def tick(self) -> None:
        self.progress += 1


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


def client(rec: Recorder, **kwargs: object) -> HttpClient:
    options: dict[object, object] = {"sleep": rec.sleep, "log": rec.log, "on_progress": rec.tick}
    options.update(kwargs)
    return HttpClient(**options)  # type: ignore[arg-type]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- success paths --------------------------------------------------------------------------------


def test_get_returns_the_httpx_response_with_json(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/items", server.reply(200, [{"id": 1, "big": 12345678901234567890}]))
    with client(rec) as http:
        response = http.get(server.url("/items"), headers={"X-Test": "yes"})
    assert isinstance(response, httpx.Response)
    assert response.json() == [{"id": 1, "big": 12345678901234567890}]
    assert server.requests[0].headers["x-test"] == "yes"
    assert http.requests == 1
    assert rec.progress == 1
    assert rec.sleeps == []
    assert re.fullmatch(r"GET http://127\.0\.0\.1:\d+/items -> 200 \(\d+ ms\)", rec.lines[0])


def test_query_values_that_are_none_are_dropped(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/items", server.reply(200, []))
    with client(rec) as http:
        http.get(server.url("/items?fixed=1"), params={"since": None, "limit": 10})
        http.get(server.url("/items"), query={"since": "2026-01-01", "page": None})
    assert server.requests[0].query == {"fixed": "1", "limit": "10"}
    assert server.requests[1].query == {"since": "2026-01-01"}


def test_params_and_query_together_are_an_asset_code_error(rec: Recorder) -> None:
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get("http://127.0.0.1:9/x", params={"a": 1}, query={"b": 2})
    assert caught.value.code == "ASSET_CODE_ERROR"


def test_drop_none_params_keeps_everything_else() -> None:
    assert drop_none_params({"a": None, "b": 0, "c": "", "d": [None, 1], "e": [None]}) == {
        "b": 0,
        "c": "",
        "d": [1],
    }
    assert drop_none_params([("a", None), ("b", 2)]) == [("b", 2)]
    assert drop_none_params("a=1") == "a=1"
    assert drop_none_params(None) is None


# -- retries ----------------------------------------------------------------------------------------


def test_429_with_retry_after_waits_that_long_then_succeeds(server: TestServer, rec: Recorder) -> None:
    server.route(
        "GET", "/items", server.sequence([(429, {"Retry-After": "2"}, b"slow down"), (200, {}, {"ok": True})])
    )
    with client(rec) as http:
        response = http.get(server.url("/items"))
    assert response.json() == {"ok": True}
    assert rec.sleeps == [2.0]
    assert "retrying in 2.0 s after 429" in rec.lines
    assert http.requests == 2
    assert rec.progress == 2


def test_500_then_success_waits_by_backoff(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/items", server.sequence([(500, {}, b"oops"), (200, {}, [])]))
    with client(rec) as http:
        assert http.get(server.url("/items")).status_code == 200
    assert rec.sleeps == [1.0]


def test_503_four_times_is_a_retryable_error_after_four_attempts(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/items", server.reply(503, "down for maintenance"))
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get(server.url("/items"))
    problem = caught.value.problem
    assert problem.code == "HTTP_ERROR"
    assert problem.retryable is True
    assert problem.details is not None
    assert problem.details["attempts"] == 4
    assert problem.details["status"] == 503
    assert problem.details["body"] == "down for maintenance"
    assert "retryAfterMs" not in problem.details
    assert "retried 3 times" in problem.hint
    assert len(server.requests) == 4
    assert rec.sleeps == [1.0, 2.0, 4.0]
    assert problem.message.endswith("/items returned 503 Service Unavailable")


def test_404_is_not_retried_and_names_method_url_status_and_body(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/missing", server.reply(404, {"error": "no such thing"}))
    url = server.url("/missing?page=2")
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get(url)
    problem = caught.value.problem
    assert len(server.requests) == 1
    assert rec.sleeps == []
    assert problem.retryable is False
    assert problem.message == f"GET {url} returned 404 Not Found"
    assert problem.details == {
        "method": "GET",
        "url": url,
        "status": 404,
        "attempts": 1,
        "body": '{"error": "no such thing"}',
    }
    assert "check the URL" in problem.hint


def test_401_hint_points_at_the_secret(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/private", server.reply(401, "who are you"))
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get(server.url("/private"))
    assert "secret" in caught.value.problem.hint
    assert caught.value.retryable is False


def test_error_body_is_cut_to_its_start(server: TestServer, rec: Recorder) -> None:
    server.route("POST", "/items", server.reply(400, "x" * 5000))
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.post(server.url("/items"), json={})
    assert caught.value.problem.details is not None
    assert caught.value.problem.details["body"] == "x" * http_module.BODY_CHARS


def test_retry_after_beyond_five_minutes_fails_at_once(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/items", server.reply(429, "quota", {"Retry-After": "600"}))
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get(server.url("/items"))
    problem = caught.value.problem
    assert problem.retryable is True
    assert problem.details is not None
    assert problem.details["retryAfterMs"] == 600_000
    assert problem.details["attempts"] == 1
    assert rec.sleeps == []
    assert len(server.requests) == 1
    assert "10 min" in problem.hint


def test_last_attempt_keeps_the_servers_retry_after(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/items", server.reply(503, "", {"Retry-After": "3"}))
    with client(rec, max_retries=1) as http, pytest.raises(CroftError) as caught:
        http.get(server.url("/items"))
    assert rec.sleeps == [3.0]
    assert caught.value.problem.details is not None
    assert caught.value.problem.details["retryAfterMs"] == 3000


def test_retries_can_be_set_per_call(server: TestServer, rec: Recorder) -> None:
    server.route("GET", "/items", server.reply(502))
    with client(rec) as http, pytest.raises(CroftError):
        http.get(server.url("/items"), retries=0)
    assert len(server.requests) == 1


def test_post_with_json_is_retried_on_502_and_resends_the_body(server: TestServer, rec: Recorder) -> None:
    server.route("POST", "/search", server.sequence([(502, {}, b"bad gateway"), (201, {}, {"id": 7})]))
    with client(rec) as http:
        response = http.post(server.url("/search"), json={"q": "croft"})
    assert response.status_code == 201
    assert [r.json() for r in server.requests_to("/search", "POST")] == [{"q": "croft"}, {"q": "croft"}]
    assert rec.sleeps == [1.0]


def test_connection_refused_is_retried_then_a_retryable_http_error(rec: Recorder) -> None:
    url = f"http://127.0.0.1:{closed_port()}/items"
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get(url)
    problem = caught.value.problem
    assert problem.code == "HTTP_ERROR"
    assert problem.retryable is True
    assert problem.details is not None
    assert problem.details["error"] == "ConnectError"
    assert problem.details["attempts"] == 4
    assert problem.details["url"] == url
    assert rec.sleeps == [1.0, 2.0, 4.0]
    assert http.requests == 0
    assert rec.progress == 0
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert "retrying in 1.0 s after ConnectError" in rec.lines


def test_read_timeout_is_retried(server: TestServer, rec: Recorder) -> None:
    release = threading.Event()
    server.route("GET", "/slow", lambda *_: (release.wait(), (200, {}, b"late"))[1])
    try:
        with client(rec, timeout=0.2, max_retries=1) as http, pytest.raises(CroftError) as caught:
            http.get(server.url("/slow"))
    finally:
        release.set()
    problem = caught.value.problem
    assert problem.retryable is True
    assert problem.details is not None
    assert problem.details["error"] == "ReadTimeout"
    assert problem.details["attempts"] == 2
    assert len(server.requests_to("/slow")) == 2
    assert rec.sleeps == [1.0]


def test_invalid_url_is_not_retried(rec: Recorder) -> None:
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get("http://example.com:abc/items")
    assert caught.value.code == "HTTP_ERROR"
    assert caught.value.problem.details is not None
    assert caught.value.problem.details["error"] == "InvalidURL"
    assert caught.value.retryable is False
    assert rec.sleeps == []


def test_unsupported_scheme_is_not_retried(rec: Recorder) -> None:
    with client(rec) as http, pytest.raises(CroftError) as caught:
        http.get("ftp://127.0.0.1/file")
    assert caught.value.problem.details is not None
    assert caught.value.problem.details["error"] == "UnsupportedProtocol"
    assert caught.value.retryable is False
    assert rec.sleeps == []


# -- redaction --------------------------------------------------------------------------------------


def test_secrets_in_url_and_body_are_redacted_everywhere(server: TestServer, rec: Recorder) -> None:
    secret = "s3cr3t-value-42"
    server.route("GET", f"/items/{secret}", server.reply(403, f"bad key {secret}"))
    redactor = Redactor({"API_KEY": secret})
    with client(rec, redactor=redactor) as http, pytest.raises(CroftError) as caught:
        http.get(server.url(f"/items/{secret}"), params={"token": "plain-token", "q": "ok"})
    problem = caught.value.problem
    everything = repr(problem.to_dict()) + "\n".join(rec.lines)
    assert secret not in everything
    assert "plain-token" not in everything
    assert "/items/[redacted:API_KEY]?token=[redacted]&q=ok" in problem.message
    assert problem.details is not None
    assert problem.details["body"] == "bad key [redacted:API_KEY]"
    assert "[redacted:API_KEY]" in rec.lines[0]
    # the server itself still got the real values
    assert server.requests[0].path == f"/items/{secret}"
    assert server.requests[0].query["token"] == "plain-token"


def test_secret_in_a_refused_connection_message_is_redacted(rec: Recorder) -> None:
    secret = "hunter2hunter2"
    redactor = Redactor({"PW": secret})
    with client(rec, redactor=redactor, max_retries=0) as http, pytest.raises(CroftError) as caught:
        http.get(f"http://127.0.0.1:{closed_port()}/x", params={"api_key": secret})
    assert secret not in repr(caught.value.problem.to_dict()) + "\n".join(rec.lines)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        pytest.param("https://h/p?api_key=abc&page=2", "https://h/p?api_key=[redacted]&page=2", id="api_key"),
        pytest.param(
            "https://h/p?access_token=abc", "https://h/p?access_token=[redacted]", id="access_token"
        ),
        pytest.param("https://h/p?a=1&Password=x", "https://h/p?a=1&Password=[redacted]", id="password"),
        pytest.param("https://h/p?client_secret=x", "https://h/p?client_secret=[redacted]", id="secret"),
        pytest.param(
            "https://h/p?key=x&monkey=y", "https://h/p?key=[redacted]&monkey=y", id="key-not-monkey"
        ),
        pytest.param("https://u:pw@h/p", "https://u:[redacted]@h/p", id="userinfo"),
        pytest.param("https://h/p?author=me", "https://h/p?author=me", id="author-is-no-auth"),
        pytest.param("https://h/p?token=", "https://h/p?token=", id="empty-value"),
    ],
)
def test_credential_named_query_values_are_hidden(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_percent_encoded_secret_is_redacted() -> None:
    redactor = Redactor({"PASS": "a b/c&d"})
    assert "a%20b" not in redact_url("https://h/p?q=a%20b%2Fc%26d", redactor)
    assert "[redacted:PASS]" in redact_url("https://h/p?q=a%20b%2Fc%26d", redactor)


# -- Retry-After and backoff ----------------------------------------------------------------------


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 3, 8, 9, 0, 0, tzinfo=UTC)
    assert parse_retry_after("2", now) == 2.0
    assert parse_retry_after("Sun, 08 Mar 2026 09:01:30 GMT", now) == 90.0
    assert parse_retry_after("Sun, 08 Mar 2026 08:00:00 GMT", now) == 0.0
    assert parse_retry_after("-5", now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None
    assert parse_retry_after("nan", now) is None


def test_retry_after_date_is_relative_to_croft_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:00:00Z")
    assert parse_retry_after("Sun, 08 Mar 2026 09:00:45 GMT") == 45.0


def test_default_backoff_doubles_from_one_second() -> None:
    assert [default_backoff(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert default_backoff(20) == 30.0


# -- httpx's exceptions: every one is mapped, in one place -----------------------------------------


def httpx_exception_classes() -> list[type[Exception]]:
    return sorted(
        (
            obj
            for obj in vars(httpx).values()
            if inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__.startswith("httpx")
        ),
        key=lambda klass: klass.__name__,
    )


def make(klass: type[Exception]) -> Exception:
    request = httpx.Request("GET", "https://h/p?token=abc")
    if issubclass(klass, httpx.HTTPStatusError):
        return klass("bad", request=request, response=httpx.Response(502, request=request))
    if issubclass(klass, httpx.RequestError):
        return klass("failed https://h/p?token=abc", request=request)
    if issubclass(klass, httpx.StreamError) and klass is not httpx.StreamError:
        return klass()  # these build their own message
    return klass("failed")


def test_the_httpx_exception_list_is_not_empty() -> None:
    names = {klass.__name__ for klass in httpx_exception_classes()}
    assert {"ConnectError", "ReadTimeout", "InvalidURL", "CookieConflict", "StreamConsumed"} <= names


@pytest.mark.parametrize("klass", httpx_exception_classes(), ids=lambda klass: klass.__name__)
def test_every_httpx_exception_has_its_own_translation(klass: type[Exception]) -> None:
    assert klass in TRANSLATIONS
    shown = "https://h/p?token=[redacted]"
    with pytest.raises(CroftError) as caught, translating("GET", "https://h/p?token=abc", shown, attempts=1):
        raise make(klass)
    error = caught.value
    assert error.__cause__.__class__ is klass
    assert error.code == TRANSLATIONS[klass][0]
    assert error.problem.details is not None
    assert error.problem.details["error"] == klass.__name__
    assert "abc" not in repr(error.problem.to_dict())


@pytest.mark.parametrize(
    ("klass", "retryable"),
    [
        pytest.param(httpx.ConnectError, True, id="connect"),
        pytest.param(httpx.ReadError, True, id="read"),
        pytest.param(httpx.RemoteProtocolError, True, id="remote-protocol"),
        pytest.param(httpx.ReadTimeout, True, id="read-timeout"),
        pytest.param(httpx.ConnectTimeout, True, id="connect-timeout"),
        pytest.param(httpx.LocalProtocolError, False, id="local-protocol"),
        pytest.param(httpx.UnsupportedProtocol, False, id="scheme"),
        pytest.param(httpx.TooManyRedirects, False, id="redirect-loop"),
        pytest.param(httpx.InvalidURL, False, id="invalid-url"),
        pytest.param(httpx.HTTPStatusError, True, id="status-502"),
        pytest.param(httpx.StreamConsumed, False, id="stream"),
    ],
)
def test_retryable_comes_from_the_mapping(klass: type[Exception], retryable: bool) -> None:
    with pytest.raises(CroftError) as caught, translating("GET", "u", "u", attempts=1):
        raise make(klass)
    assert caught.value.retryable is retryable


def test_a_future_httpx_subclass_lands_on_its_nearest_parent() -> None:
    class BrandNewTimeout(httpx.ReadTimeout):
        pass

    with pytest.raises(CroftError) as caught, translating("GET", "u", "u", attempts=1):
        raise BrandNewTimeout("late")
    assert caught.value.retryable is True
    assert caught.value.problem.hint == TRANSLATIONS[httpx.ReadTimeout][2]


def test_other_exceptions_pass_through_untranslated() -> None:
    with pytest.raises(KeyError), translating("GET", "u", "u", attempts=1):
        raise KeyError("not httpx")


def test_httpx_is_imported_only_by_the_http_module_and_the_webhook() -> None:
    import pathlib

    root = pathlib.Path(http_module.__file__).resolve().parents[1]
    importers = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if re.search(r"^\s*(import httpx|from httpx)", path.read_text(), re.MULTILINE)
    }
    webhook = {name for name in importers if re.fullmatch(r"notify/webhook\.py", name)}
    assert "engine/http.py" in importers
    assert importers - webhook == {"engine/http.py"}


def test_retry_after_as_an_http_date_waits_until_then(
    server: TestServer, rec: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T09:00:00Z")
    later = "Sun, 08 Mar 2026 09:00:30 GMT"
    server.route("GET", "/items", server.sequence([(503, {"Retry-After": later}, b""), (200, {}, [])]))
    with client(rec) as http:
        http.get(server.url("/items"))
    assert rec.sleeps == [30.0]


# -- the test server itself (other suites rely on it) ----------------------------------------------


def test_server_answers_unknown_routes_with_404_and_logs_them(server: TestServer) -> None:
    response = httpx.post(server.url("/nowhere?a=1&a=2"), content=b"hello")
    assert response.status_code == 404
    assert response.json()["error"] == "no route"
    (seen,) = server.requests
    assert (seen.method, seen.path, seen.body) == ("POST", "/nowhere", b"hello")
    assert seen.query == {"a": ["1", "2"]}


def test_server_sequence_repeats_its_last_reply(server: TestServer) -> None:
    server.route("GET", "/s", server.sequence([(500, {}, "first"), (200, {"X-Kind": "last"}, "last")]))
    answers = [httpx.get(server.url("/s")) for _ in range(3)]
    assert [(r.status_code, r.text) for r in answers] == [(500, "first"), (200, "last"), (200, "last")]
    assert answers[-1].headers["x-kind"] == "last"
    assert answers[-1].headers["content-type"] == "text/plain; charset=utf-8"


def test_server_turns_a_raising_handler_into_500_and_keeps_the_error() -> None:
    def broken(*_: object) -> tuple[int, dict[str, str], object]:
        raise ValueError("handler bug")

    with serve() as running:
        running.route("GET", "/b", broken)
        assert httpx.get(running.url("/b")).status_code == 500
        assert [type(e) for e in running.errors] == [ValueError]
