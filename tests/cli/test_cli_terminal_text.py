"""Text from outside reaches a person's terminal inert: an API answering with a clipboard write
(``ESC]52``) or a screen clear (``ESC[2J``), an asset printing them, a file name holding them. Real
``croft`` processes against a real local HTTP server; human output shows every control character
escaped, ``--json`` stays JSON (the same text, JSON-escaped).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from croft.core.text import for_terminal

HOSTILE = "oops \x1b]52;c;SGVsbG8=\x07 and \x1b[2J cleared \u202egnp.exe \x9b31m"
ASSET = """
from croft import ingest


@ingest(key="id")
def rows(ctx):
    print("asset says \\x1b[2J\\x07bell")
    ctx.http.get({url!r}).json()
    yield [{{"id": 1}}]
"""


def croft(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CROFT_RETRY_DELAYS": "0,0", "CROFT_NOW": "2026-06-01T09:30:00Z"}
    return subprocess.run(
        [sys.executable, "-P", "-m", "croft", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def raw_controls(text: str) -> list[str]:
    """The control characters a terminal would act on (line feeds aside)."""
    return sorted({c for c in text if c != "\n" and for_terminal(c) != c})


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_for_terminal_escapes_every_control_and_keeps_the_rest() -> None:
    every = "".join(chr(c) for c in range(0x2100))
    shown = for_terminal(every)
    assert raw_controls(shown) == []
    assert "\\x1b" in shown and "\\x9b" in shown and "\\x0d" in shown and "\\u202e" in shown
    assert "\n" in shown and "\t" in shown and "é✔" in for_terminal("é✔")


@pytest.mark.processes
def test_an_api_answer_asset_output_and_file_name_are_escaped_in_every_human_screen(
    make_project, server
) -> None:  # type: ignore[no-untyped-def]
    server.route("GET", "/x", server.reply(500, HOSTILE.encode()))
    root = make_project({"assets/a.py": ASSET.format(url=server.url("/x"))})

    ran = croft(root, "run")
    logs = croft(root, "logs", "a")
    for done in (ran, logs):
        assert done.returncode in (0, 1), done.stderr
        assert raw_controls(done.stdout + done.stderr) == [], done.stdout + done.stderr
    assert "\\x1b]52;c;SGVsbG8=\\x07 and \\x1b[2J cleared \\u202egnp.exe \\x9b31m" in logs.stdout
    assert "asset says \\x1b[2J\\x07bell" in logs.stdout

    as_json = croft(root, "logs", "a", "--json")
    assert raw_controls(as_json.stdout) == []  # JSON escapes them itself
    assert any(HOSTILE in text for text in strings(json.loads(as_json.stdout)))  # the same text, intact

    (root / "assets" / "b\x1b[2J.py").write_text("x = 1\n")  # a file name from outside too
    checked = croft(root, "validate")
    assert checked.returncode == 2
    assert raw_controls(checked.stdout + checked.stderr) == []
    assert "b\\x1b[2J.py" in checked.stdout + checked.stderr
