"""The pages as rendered from croft's JSON: escaped, no inline script or style, the 7-day strip's
worst-of-bucket bars, the asset's page, the lineage graph and the timeline."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from croft.core.clock import parse_instant
from croft.ui.assetpage import asset_html, runs_chart
from croft.ui.lineage import layout, lineage_html
from croft.ui.page import confirm_html, overview_html
from croft.ui.snapshot import STRIP_BUCKETS, parse_strip, strip_start, strip_text
from croft.ui.timeline import timeline_html

EVIL = '<img src=x onerror="alert(1)">'
NOW = "2026-03-02T10:00:00Z"


def entry(name: str, kind: str = "ingest", **kw: Any) -> dict[str, Any]:
    return {
        "asset": name,
        "kind": kind,
        "description": EVIL,
        "file": f"assets/{name}.py",
        "rows": 3,
        "stale": False,
        "staleReasons": [],
        "problems": [],
        "lastRun": {"runId": "r_1", "at": "2026-03-02T09:58:00Z", "status": "ok", "attempt": 1},
        "schedule": {
            "schedule": "every 5 minutes",
            "cron": "*/5 * * * *",
            "nextFireAt": "2026-03-02T10:05:00+00:00",
            "next": "schedule",
            "hold": None,
        },
        **kw,
    }


def problem(code: str, message: str, *, hint: str = "h", severity: str = "error") -> dict[str, Any]:
    """A problem as the envelope carries it."""
    return {"code": code, "severity": severity, "message": message, "hint": hint}


def snap(
    *assets: dict[str, Any], state: str = "on", problems: Any = (), strips: Any = None
) -> dict[str, Any]:
    assets = assets or (entry("orders"),)
    project = {
        "root": "/p",
        "name": "p",
        "timezone": "UTC",
        "status": {
            "ok": True,
            "data": {
                "assets": list(assets),
                "running": [],
                "scheduling": {"state": state, "effective": state, "heartbeatAt": "2026-03-02T09:59:00Z"},
            },
            "problems": list(problems),
            "next": [],
        },
        "inputs": {"orders": [], "summary": ["orders"], "report": ["orders", "summary"]},
        "strips": strips or {},
        "stripStart": "2026-02-23T12:00:00Z",
    }
    return {
        "at": NOW,
        "bucketSeconds": 21600,
        "projects": [project],
        "queue": {"running": 1, "cap": 2, "waitingCount": 3, "waiting": []},
        "doctor": {"data": {"checks": [{"ok": True}]}},
    }


def test_every_value_is_escaped_and_nothing_inline_runs() -> None:
    failed = entry("orders", lastRun={"runId": "r_1", "at": NOW, "status": "failed", "message": EVIL})
    html = overview_html(snap(failed), "c", [{"kind": "bad", "text": EVIL}])
    assert EVIL not in html and "&lt;img src=x" in html
    assert "style=" not in html and "onerror=" not in html.replace("onerror=&quot;", "")
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/ui.js" defer>']


def test_the_overview_has_a_row_per_asset_the_queue_and_doctor_in_words() -> None:
    html = overview_html(snap(), "c", [])
    assert html.count("<tr class=asset") == 1 and 'data-mark="ok"' in html
    assert "queue: 1 of 2 going, 3 waiting" in html and "doctor: all 1 checks pass" in html
    assert 'data-state="on"' in html and "Pause 2h" in html and 'name=csrf value="c"' in html
    assert 'title="*/5 * * * * · UTC"' in html
    assert '<time datetime="2026-03-02T10:05:00+00:00" data-age>10:05 (in 5 min)</time>' in html


def test_a_problem_shows_in_words_its_commands_as_code_and_any_new_code_alike() -> None:
    new = problem(
        "CLOCK_MOVED_BACK",
        "a tick was stamped at 2026-03-02T15:00:00Z, ahead of the clock",
        hint="Run `croft doctor` to see it.",
        severity="warning",
    )
    html = overview_html(snap(problems=[new]), "c", [])
    assert "a tick was stamped at 15:00, ahead of the clock" in html
    assert "Run <code>croft doctor</code> to see it." in html and "`" not in html.split("<main")[1]


def test_next_fires_say_off_and_stale_instead_of_a_promise() -> None:
    off = overview_html(snap(state="off"), "c", [])
    assert "none while scheduling is off" in off and "in 5 min" not in off
    stale = problem("SCHEDULER_STALE", "nothing ticked for 9 min")
    html = overview_html(snap(problems=[stale]), "c", [])
    assert "only once the scheduler ticks again" in html and "The scheduler is not ticking." in html


def test_a_bucket_shows_its_worst_result_so_failures_are_never_hidden() -> None:
    rows = [(3, "ok", 40), (3, "failed", 1), (5, "ok", 12), (27, "skipped", 2), (27, "ok", 1)]
    text = strip_text(rows)
    buckets = parse_strip(text)
    assert len(buckets) == STRIP_BUCKETS
    assert (
        buckets[3] == ("failed", 41, 1) and buckets[5] == ("ok", 12, 0) and buckets[27] == ("skipped", 3, 0)
    )
    assert buckets[0] is None
    html = overview_html(snap(strips={"orders": text}), "c", [])
    svg = re.search(r"<svg class=strip7.*?</svg>", html)
    assert svg is not None
    failed = re.search(r'<path class="bar s-failed" d="([^"]+)"', svg.group(0))
    assert failed is not None and failed.group(1).startswith("M18,")  # bucket 3: x = 3 * 6
    assert 'data-failed="1"' in svg.group(0)


def test_the_strip_starts_on_a_bucket_edge_and_ends_with_the_current_bucket() -> None:
    now = parse_instant("2026-03-02T10:17:00Z")
    start = strip_start(now)
    assert start == parse_instant("2026-02-23T12:00:00Z")
    assert (
        start + timedelta(hours=6 * STRIP_BUCKETS) > now >= start + timedelta(hours=6 * (STRIP_BUCKETS - 1))
    )


def asset_page(**kw: Any) -> dict[str, Any]:
    attempts = [
        {
            "runId": f"r_{i}",
            "attempt": 1,
            "status": s,
            "reason": "requested",
            "startedAt": "2026-03-02T09:00:00Z",
            "finishedAt": f"2026-03-02T09:00:0{i}Z",
            "error": None,
            "log": None,
            "rows": {"added": i},
            "trigger": "schedule",
        }
        for i, s in enumerate(["failed", "ok", "crashed"], 1)
    ]
    return {
        "root": "/p",
        "asset": "orders",
        "at": NOW,
        "timezone": "UTC",
        "scheduling": {"state": "on", "effective": "on"},
        "entry": entry("orders"),
        "freshness": None,
        "reads": [],
        "readBy": ["summary"],
        "fires": ["2026-03-02T10:05:00Z", "2026-03-02T10:10:00Z", "2026-03-02T10:15:00Z"],
        "columns": [{"name": "id", "type": "INTEGER"}],
        "filters": {"result": "", "trigger": ""},
        "chosen": None,
        "attempts": attempts,
        "logs": {"r_1#1": {"lines": ["2026-03-02T09:00:00.000Z fetching", EVIL], "truncated": False}},
        **kw,
    }


def test_the_asset_page_says_what_it_is_when_it_runs_and_its_own_logs() -> None:
    html = asset_html(asset_page(), "c", [])
    assert EVIL not in html and EVIL not in confirm_html("/p", EVIL, "c")
    assert "every 5 minutes" in html and "<code>*/5 * * * *</code>" in html
    fires = re.search(r"<dt>next fires</dt><dd>(.*?)</dd>", html)
    assert fires is not None and fires.group(1).count("<time ") == 3  # the next three fires
    assert 'href="/asset?project=%2Fp&amp;asset=summary"' in html  # read by, a link
    assert "<code>id</code>" in html
    details = re.findall(r"<details class=attempt[^>]*>", html)
    assert len(details) == 3 and details[0].endswith(" open>") and not details[1].endswith(" open>")
    assert '<time datetime="2026-03-02T09:00:00.000Z">09:00</time> fetching' in html


def test_a_held_asset_page_shows_the_hold_and_its_command() -> None:
    hold = {"code": "SCHEDULE_HELD", "kind": "hold", "reason": "its code changed", "until": None, "hint": ""}
    held = entry("orders", schedule={**entry("orders")["schedule"], "hold": hold})
    html = asset_html(asset_page(entry=held, attempts=[], logs={}), "c", [])
    assert "held: code not yet run by a person" in html and "its code changed" in html
    assert "<code class=command>croft run orders</code>" in html and "no run yet" in html


def test_the_chart_has_a_bar_per_run_oldest_left() -> None:
    svg = runs_chart(asset_page()["attempts"], parse_instant(NOW), None)
    bars = re.findall(r'<rect class="bar (s-\w+)"[^>]* data-seconds="([\d.]+)"', svg)
    assert bars == [("s-failed", "3.000"), ("s-ok", "2.000"), ("s-failed", "1.000")]


def test_lineage_layers_follow_what_each_reads_with_an_edge_per_input() -> None:
    inputs = {"orders": [], "summary": ["orders"], "report": ["orders", "summary"]}
    where = layout(inputs, ["report", "summary", "orders"])
    assert where["orders"][0] == 0 and where["summary"][0] == 1 and where["report"][0] == 2
    html = lineage_html(snap(entry("orders"), entry("summary", "sql"), entry("report", "sql")), "c")
    assert html.count("<a class=node") == 3 and html.count("<path class=edge") == 3
    assert 'data-from="orders" data-to="report"' in html


def test_the_timeline_draws_past_attempts_and_planned_fires_held_hollow() -> None:
    hold = {"code": "SCHEDULE_HELD", "kind": "hold", "reason": "x", "until": None, "hint": ""}
    held = entry("summary", schedule={**entry("summary")["schedule"], "hold": hold})
    s = snap(entry("orders"), held)
    line = {
        "hours": 24,
        "past": {
            "orders": [
                {
                    "runId": "r_9",
                    "attempt": 1,
                    "status": "failed",
                    "startedAt": "2026-03-02T09:00:00Z",
                    "finishedAt": "2026-03-02T09:01:00Z",
                }
            ]
        },
        "planned": {"orders": ["2026-03-02T10:05:00Z"], "summary": ["2026-03-02T10:05:00Z"]},
    }
    html = timeline_html(s, [line], "c")
    assert '<rect class="run s-failed" data-run="r_9"' in html
    assert html.count('class="fire due"') == 1 and html.count('class="fire held"') == 1
    off = timeline_html(snap(entry("orders"), state="off"), [line], "c")
    assert 'class="fire' not in off


def test_strips_still_being_counted_say_so_instead_of_an_empty_week() -> None:
    s = snap(strips={"orders": "o1 " * 27 + "x1/1"})
    s["projects"][0]["stripsPending"] = True
    html = overview_html(s, "c", [])
    assert "counting…" in html and "<svg class=strip7" not in html
    s["projects"][0]["stripsPending"] = False
    assert "<svg class=strip7" in overview_html(s, "c", [])


def test_a_scheduled_row_has_its_own_pause_and_a_paused_one_its_resume() -> None:
    hold = {"code": "SCHEDULE_PAUSED", "kind": "asset_paused", "reason": "paused", "until": None, "hint": ""}
    paused = entry("pulls", schedule={**entry("pulls")["schedule"], "hold": hold})
    html = overview_html(snap(entry("orders"), paused, entry("summary", kind="sql", schedule={})), "c", [])
    rows = {
        name: found.group(0)
        for name in ("orders", "pulls", "summary")
        if (found := re.search(rf'<tr class=asset data-asset="{name}".*?</tr>', html, flags=re.S))
    }
    assert 'action="/api/pause"' in rows["orders"] and 'name=asset value="orders"' in rows["orders"]
    assert 'action="/api/resume"' in rows["pulls"] and "Resume" in rows["pulls"]
    assert "asset-pause" not in rows["summary"]  # a transform has no schedule to pause
