"""The page as rendered from croft's JSON: escaped, no inline script or style, the sparkline's bars."""

from __future__ import annotations

import re
from typing import Any

from croft.ui.page import asset_html, confirm_html, overview_html, sparkline

EVIL = '<img src=x onerror="alert(1)">'


def snap(name: str = "orders", message: str = "fine") -> dict[str, Any]:
    asset = {
        "asset": name,
        "kind": "ingest",
        "description": EVIL,
        "rows": 3,
        "stale": False,
        "staleReasons": [],
        "problems": [],
        "lastRun": {
            "runId": "r_1",
            "at": "2026-03-02T09:58:00Z",
            "status": "failed",
            "attempt": 1,
            "code": "HTTP_ERROR",
            "message": message,
        },
        "schedule": {
            "schedule": "every 5 minutes",
            "cron": "*/5 * * * *",
            "nextFireAt": "2026-03-02T10:05+00:00",
            "next": "schedule",
            "hold": None,
        },
    }
    steps = [
        {
            "asset": name,
            "runId": f"r_{i}",
            "status": s,
            "attempt": 1,
            "startedAt": "2026-03-02T09:00:00Z",
            "finishedAt": f"2026-03-02T09:00:0{i}Z",
        }
        for i, s in enumerate(["failed", "ok", "crashed"], 1)
    ]
    runs = {"data": {"runs": [{"trigger": "manual", "steps": [s]} for s in steps]}}
    project = {
        "root": "/p",
        "name": "p",
        "timezone": "UTC",
        "status": {"ok": True, "data": {"assets": [asset], "running": []}, "problems": [], "next": []},
        "schedule": {
            "ok": True,
            "data": {
                "scheduling": {"state": "on", "lastTickAt": "2026-03-02T09:59:00Z"},
                "assets": [{"asset": name, "held": None}],
                "queue": {"running": 1, "cap": 2, "waitingCount": 3, "waiting": []},
            },
            "problems": [],
            "next": [],
        },
        "runs": {name: runs},
    }
    return {
        "at": "2026-03-02T10:00:00Z",
        "projects": [project],
        "doctor": {"data": {"checks": [{"ok": True}]}},
    }


def test_every_value_is_escaped_and_nothing_inline_runs() -> None:
    html = overview_html(snap(message=EVIL), "c", [{"kind": "bad", "text": EVIL}])
    assert EVIL not in html and "&lt;img src=x" in html
    assert "style=" not in html and "onerror=" not in html.replace("onerror=&quot;", "")
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/ui.js" defer>']


def test_the_overview_has_one_row_per_asset_the_strip_and_the_queue() -> None:
    html = overview_html(snap(), "c", [])
    assert html.count("<tr class=asset") == 1 and 'data-mark="failed"' in html
    assert "queue: 1 of 2 going, 3 waiting" in html and "doctor: all 1 checks pass" in html
    warned = {
        "data": {
            "checks": [
                {"ok": True},
                {
                    "ok": True,
                    "warning": True,
                    "check": "notifications /p",
                    "detail": "no session bus",
                    "fix": None,
                },
            ]
        }
    }
    html = overview_html({**snap(), "doctor": warned}, "c", [])  # a warning is never "all pass"
    assert "all 2 checks pass" not in html and "doctor: ⚠ notifications /p: no session bus" in html
    assert 'data-state="on"' in html and "Pause 2h" in html and 'name=csrf value="c"' in html
    assert "failed once" in html  # its runs, newest first: failed, ok, crashed: a streak of one
    assert 'title="*/5 * * * * · UTC"' in html


def test_the_sparkline_has_a_bar_per_run_oldest_left_coloured_by_result() -> None:
    steps = snap()["projects"][0]["runs"]["orders"]["data"]["runs"]
    flat = [r["steps"][0] for r in steps]
    from croft.core.clock import parse_instant

    svg = sparkline(flat, parse_instant("2026-03-02T10:00:00Z"))
    bars = re.findall(r'<rect class="bar (s-\w+)" data-run="(r_\d)" data-seconds="([\d.]+)"', svg)
    assert bars == [("s-failed", "r_3", "3.000"), ("s-ok", "r_2", "2.000"), ("s-failed", "r_1", "1.000")]


def test_the_asset_page_and_the_confirm_escape_too() -> None:
    page = {
        "root": "/p",
        "asset": EVIL,
        "at": "2026-03-02T10:00:00Z",
        "steps": {"data": {"steps": []}},
        "run": None,
    }
    assert EVIL not in asset_html(page, "c", []) and EVIL not in confirm_html("/p", EVIL, "c")
    assert "approves" in confirm_html("/p", "orders", "c")
