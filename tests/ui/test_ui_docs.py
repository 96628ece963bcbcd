"""docs/ui.md is a guide `croft docs ui` prints, and its screenshots (taken by the browser test) are there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from croft.cli.docs import resolve

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_guide_and_its_screenshot() -> None:
    found = resolve("ui")
    assert found is not None and found[0] == "ui"
    assert found[1].read_text(encoding="utf-8") == (DOCS / "ui.md").read_text(encoding="utf-8")
    for shot in ("ui.png", "ui-asset.png", "ui-lineage.png", "ui-timeline.png"):
        assert f"]({shot})" in (DOCS / "ui.md").read_text(encoding="utf-8")
        assert (DOCS / shot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert resolve("dashboard") == found


@pytest.mark.processes
def test_croft_docs_ui_prints_it() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "croft", "docs", "ui", "--json"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0
    assert json.loads(out.stdout)["data"]["text"] == (DOCS / "ui.md").read_text(encoding="utf-8")
