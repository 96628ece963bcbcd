"""Secrets in every spelling an API may echo them in, and secrets too large to be secrets.

An API answers 400 with the key echoed back JSON-escaped (PHP-style ``\\/``, ``\\u00e4``, ``\\"``),
percent-encoded both ways, in base64 (standard and URL-safe) and HTML-escaped; the asset prints the same.
Real ``croft`` processes, a real local HTTP server; nothing of it is left in runs.sqlite, the logs or the
``--json`` output. A 100 KB or 1 MB value in ``.env`` is refused by ``validate`` and ``run`` naming its
key (it made a run take 9 s, or never end).
"""

from __future__ import annotations

import base64
import html
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from enginekit import spawn

from croft.core.redact import MAX_SECRET_BYTES, Redactor

pytestmark = pytest.mark.processes

SECRET = 'Zk3/q+Lm9ä"<&>=='  # a slash, a plus, a non-ASCII letter, a quote and HTML's three


def spellings(value: str) -> dict[str, str]:
    raw = value.encode()
    return {
        "json": json.dumps(value)[1:-1],
        "json_unicode": json.dumps(value, ensure_ascii=False)[1:-1],
        "json_php": json.dumps(value)[1:-1].replace("/", "\\/"),
        "quote": quote(value, safe=""),
        "quote_slash": quote(value),
        "quote_plus": quote_plus(value),
        "base64": base64.b64encode(raw).decode(),
        "base64_url": base64.urlsafe_b64encode(raw).decode(),
        "html": html.escape(value),
    }


def everything_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_every_encoding_of_a_secret_is_redacted_in_history_logs_and_json(make_project, server) -> None:
    forms = spellings(SECRET)
    echoed = "; ".join(f"{name}={form}" for name, form in forms.items())
    server.route("GET", "/orders", server.reply(400, {"error": "bad key", "echo": echoed, "key": SECRET}))
    root = make_project(
        {
            "assets/orders.py": f"""
            from croft import ingest


            @ingest(key="id", secrets=["SHOP_KEY"])
            def rows(ctx):
                print({echoed!r})
                yield ctx.http.get({server.url("/orders")!r}).json()
            """,
            ".env": f"SHOP_KEY='{SECRET}'\n",
        }
    )
    child = spawn(root, "run", env={"CROFT_RETRY_DELAYS": "0"})
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 1, out
    logs = spawn(root, "logs", "orders")
    logs_out, _ = logs.communicate(timeout=60)
    state = everything_under(root / ".croft")  # runs.sqlite, its -wal, the step logs
    assert b"[redacted:SHOP_KEY]" in state
    for name, form in {"raw": SECRET, **forms}.items():
        for text in (out, logs_out, json.dumps(json.loads(logs_out)), json.dumps(json.loads(out))):
            assert form not in text, name
        assert form.encode() not in state, name
        assert json.dumps(form)[1:-1].encode() not in state, name


def test_redaction_is_linear_for_a_large_secret() -> None:
    # a value at the bound, in text of a few MB: every form is hidden (no regular expression is built)
    value = ("k9/+ä" * MAX_SECRET_BYTES)[: MAX_SECRET_BYTES // 2]
    redactor = Redactor({"BIG": value})
    text = "x" * 2_000_000 + json.dumps(value)[1:-1] + quote(value, safe="") + "y" * 1_000_000
    hidden = redactor.text(text)
    assert hidden == "x" * 2_000_000 + "[redacted:BIG]" * 2 + "y" * 1_000_000


@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_a_secret_larger_than_the_bound_is_refused_by_validate_and_run_naming_its_key(
    make_project, size: int
) -> None:
    root = make_project(
        {
            "assets/orders.py": """
            from croft import ingest


            @ingest(key="id")
            def rows(ctx):
                yield {"id": 1}
            """,
            ".env": f"SMALL=abcdefgh\nHUGE={'a' * size}\n",
        }
    )
    for command in ("validate", "run"):
        done = subprocess.run(
            [sys.executable, "-P", "-m", "croft", command, "--json"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,  # a 1 MB value used to never finish
        )
        envelope = json.loads(done.stdout)
        (found,) = [p for p in envelope["problems"] if p["code"] == "ENV_INVALID"]
        assert found["details"]["keys"] == ["HUGE"], found
        assert f"HUGE ({size:,} bytes)" in found["message"]
        assert "a" * 100 not in done.stdout + done.stderr  # the value itself is never shown
        assert done.returncode == 2, (command, envelope)
    assert not (root / "warehouse.sqlite").exists()  # the run touched no data
