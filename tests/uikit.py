"""Helpers for the status page's tests: a real ``croft ui --no-open`` process, and headless Chromium.

``running_ui`` starts the command, reads the one line it prints first (its address) and stops it with
SIGINT at the end, checking it ends as Ctrl-C ends it. ``browser`` launches Debian's chromium through
playwright with the executable given, so nothing is ever downloaded; without either (not in CI) the
test skips and says why, in CI it fails.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class Ui:
    url: str  # the printed address, token included
    process: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)  # what it wrote there, once it has stopped

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 0)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return urlsplit(self.url).query.split("token=", 1)[1]


@contextmanager
def running_ui(
    *args: str, cwd: Path, env: dict[str, str] | None = None, preexec_fn: Any = None
) -> Iterator[Ui]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "croft", "ui", "--no-open", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    ui: Ui | None = None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready and proc.stdout else ""
        if not line.startswith("croft ui: http://127.0.0.1:"):
            proc.kill()
            raise AssertionError(f"croft ui printed {line!r} first; stderr: {proc.communicate()[1]!r}")
        ui = Ui(line.split(": ", 1)[1].strip(), proc)
        yield ui
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)  # reads and closes both pipes
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError("croft ui did not stop on Ctrl-C") from None
    if ui is not None:
        ui.stderr.append(err)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err


def cannot(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


@contextmanager
def browser(*, javascript: bool = True, bypass_csp: bool = False) -> Iterator[Any]:
    """A fresh persistent Chromium context (its own empty profile), never a downloaded browser."""
    os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    if not shutil.which(CHROMIUM):
        cannot(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        cannot("playwright is not installed (the dev extra has it)")
    with tempfile.TemporaryDirectory(prefix="croft-ui-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1300, "height": 640},
            java_script_enabled=javascript,
            bypass_csp=bypass_csp,  # only for a test's own script (axe-core): the page's CSP stays strict
        )
        try:
            yield context
        finally:
            context.close()
