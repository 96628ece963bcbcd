"""The gate's decisions: which Host, cookie, Origin and CSRF token a request may carry."""

from __future__ import annotations

from croft.ui.guard import HEADERS, Gate, new_gate


def gate() -> Gate:
    return Gate(8123, token="tok", session="sess", csrf="csrf")


def test_only_this_loopback_port_by_name_or_number_is_a_host() -> None:
    g = gate()
    assert g.host_ok("127.0.0.1:8123") and g.host_ok("localhost:8123") and g.host_ok("LOCALHOST:8123")
    for other in (
        None,
        "",
        "127.0.0.1",
        "127.0.0.1:8124",
        "evil.example:8123",
        "localhost.evil:8123",
        "[::1]:8123",
    ):
        assert not g.host_ok(other), other


def test_the_cookie_is_the_session_and_only_this_ports() -> None:
    g = gate()
    assert g.signed_in("croft_ui_8123=sess")
    assert g.signed_in("other=1; croft_ui_8123=sess")
    assert not g.signed_in(None)
    assert not g.signed_in("croft_ui_8123=tok")  # the URL's token is not the session
    assert not g.signed_in("croft_ui_9999=sess")  # another page's cookie
    assert not g.signed_in('croft_ui_8123="')  # a header that does not parse
    cookie = g.set_cookie()
    assert cookie.startswith("croft_ui_8123=sess;") and "HttpOnly" in cookie and "SameSite=Strict" in cookie


def test_a_post_needs_this_pages_origin_and_the_csrf_token() -> None:
    g = gate()
    assert g.post_refusal("http://127.0.0.1:8123", "csrf") is None
    assert g.post_refusal("http://localhost:8123", "csrf") is None
    assert "Origin missing" in (g.post_refusal(None, "csrf") or "")
    assert g.post_refusal("http://evil.example", "csrf")
    assert g.post_refusal("https://127.0.0.1:8123", "csrf")
    assert g.post_refusal("http://127.0.0.1:8124", "csrf")
    assert "CSRF" in (g.post_refusal("http://127.0.0.1:8123", None) or "")
    assert g.post_refusal("http://127.0.0.1:8123", "tok")


def test_each_page_gets_its_own_random_secrets() -> None:
    a, b = new_gate(1), new_gate(1)
    assert len({a.token, a.session, a.csrf, b.token, b.session, b.csrf}) == 6
    assert len(a.token) >= 24 and "token" not in repr(a) and a.token not in repr(a)


def test_the_policy_refuses_everything_not_shipped() -> None:
    csp = HEADERS["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "http:" not in csp
    assert HEADERS["X-Content-Type-Options"] == "nosniff" and HEADERS["Cache-Control"] == "no-store"
