"""The page people look at, in Debian's Chromium against a real ``croft ui`` over a project with a
real history (runs made over the last two days by ``croft run`` at moved clocks, a scheduled tick at
the real clock): a failing asset's 7-day strip is red where it failed, the lineage graph has a node
per asset and an edge per input whose links work, the timeline shows what ran and what is planned, a
held asset's page shows its hold and the command that releases it, and axe-core finds no serious or
critical accessibility violation on the four pages. The screenshots in docs/ui.md are taken here."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from schedulekit import croft_json, tick
from uikit import browser, cannot, running_ui

pytestmark = pytest.mark.processes

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
AXE = REPO / ".cache" / "npm" / "node_modules" / "axe-core" / "axe.min.js"

ORDERS = """
from croft import ingest


@ingest(schedule="every hour", key="id", description="Orders from the shop")
def orders(ctx):
    yield [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
"""
PAYMENTS = """
import pathlib

from croft import ingest

BROKEN = pathlib.Path(__file__).resolve().parents[1] / "payments-down"


@ingest(schedule="every hour", key="id", description="Payments from the bank's API")
def payments(ctx):
    if BROKEN.exists():
        raise RuntimeError("the bank answered 503")
    yield [{"id": 1, "amount": 10}]
"""
PRICES = """
from croft import ingest


@ingest(schedule="every day at 06:00", key="id", description="Prices list")
def prices(ctx):
    yield [{"id": 1, "price": 3}]
"""
SUMMARY = "-- key: id\n-- description: Orders ten times over\nSELECT id, n * 10 AS m FROM orders\n"
REPORT = (
    "-- key: id\n-- description: Orders with their summary\n"
    "SELECT o.id, o.n, s.m FROM orders o JOIN summary s ON s.id = o.id\n"
)
SETTLED = "-- key: id\n-- description: Paid orders\nSELECT p.id, p.amount FROM payments p\n"
INPUTS = {
    "orders": [],
    "payments": [],
    "prices": [],
    "summary": ["orders"],
    "report": ["orders", "summary"],
    "settled": ["payments"],
}


def at(now: datetime, hours: float) -> str:
    return (now - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def project(make_project: Any) -> tuple[Path, datetime]:
    root = make_project(
        {
            "assets/orders.py": ORDERS,
            "assets/payments.py": PAYMENTS,
            "assets/prices.py": PRICES,
            "assets/summary.sql": SUMMARY,
            "assets/report.sql": REPORT,
            "assets/settled.sql": SETTLED,
        },
        timezone="UTC",
    )
    now = datetime.now(UTC)
    for hours in (46, 30, 20, 12, 6):  # a history: every asset built, by hand, at moved clocks
        code, envelope = croft_json(root, at(now, hours), "run")
        assert code == 0, envelope
    (root / "payments-down").write_text("503")
    for hours in (2.5, 1.5):  # payments fails now, settled is skipped
        croft_json(root, at(now, hours), "run", "payments", "settled")
    code, envelope = croft_json(root, at(now, 0.2), "schedule", "on", "--no-os-job")
    assert code in (0, 1), envelope
    # prices' code changes after it last ran: the scheduler holds it until a person runs it
    (root / "assets" / "prices.py").write_text(PRICES.replace('"price": 3', '"price": 4'))
    tick(root, at(now, 0))  # the real clock's minute: due runs go (payments fails again), a heartbeat
    return root, datetime.now(UTC)


def axe(context: Any, url: str) -> list[dict[str, Any]]:
    """axe-core run inside the real page (its script added past the page's CSP by the test only)."""
    page = context.new_page()
    page.goto(url)
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    page.close()
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
        for v in found
        if v.get("impact") in ("serious", "critical")
    ]


def test_strip_lineage_timeline_held_page_screenshots_and_accessibility(make_project: Any) -> None:
    root, _ = project(make_project)
    with running_ui("--project", str(root), cwd=root) as ui, browser() as context:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(ui.url)
        page.wait_for_selector("body[data-live='1']")

        # a failing asset's strip: red in the buckets where it failed, green where it did not
        page.wait_for_selector("tr[data-asset=payments] svg.strip7")  # (counted, not "counting…")
        strip = page.locator("tr[data-asset=payments] svg.strip7")
        tokens = (strip.get_attribute("data-strip") or "").split(" ")
        red = [i for i, t in enumerate(tokens) if t.startswith(("x", "c"))]
        green = [i for i, t in enumerate(tokens) if t.startswith(("o", "u"))]
        assert red and green and max(red) == len(tokens) - 1 and min(green) < min(red), tokens
        assert strip.locator("path.bar.s-failed").count() == 1
        assert int(strip.get_attribute("data-failed") or 0) == len(red)
        assert page.get_attribute("tr[data-asset=payments]", "data-mark") == "failed"
        assert page.get_attribute("tr[data-asset=settled]", "data-mark") == "skipped"  # not green
        DOCS.mkdir(exist_ok=True)
        page.screenshot(path=str(DOCS / "ui.png"), full_page=True)

        # the lineage graph: a node per asset, an edge per input, each node a link to its page
        page.click("nav a[href='/lineage']")
        page.wait_for_selector("body[data-page=lineage]")
        nodes = page.eval_on_selector_all("svg.lineage a.node", "els => els.map(e => e.dataset.asset)")
        assert sorted(nodes) == sorted(INPUTS)
        edges = page.eval_on_selector_all(
            "svg.lineage path.edge", "els => els.map(e => [e.dataset.from, e.dataset.to])"
        )
        assert sorted(map(tuple, edges)) == sorted((i, n) for n, ins in INPUTS.items() for i in ins)
        assert page.get_attribute("svg.lineage a.node[data-asset=payments]", "data-mark") == "failed"
        page.screenshot(path=str(DOCS / "ui-lineage.png"), full_page=True)
        page.click("svg.lineage a.node[data-asset=report]")
        page.wait_for_selector("body[data-page=asset]")
        assert page.inner_text("h1") == "report"
        assert "orders" in page.inner_text("dl.facts") and "summary" in page.inner_text("dl.facts")

        # the timeline: what ran in the last 24 h, what is planned in the next, the hold drawn as one
        page.click("nav a[href='/timeline']")
        page.wait_for_selector("body[data-page=timeline]")
        assert page.locator("tr[data-asset=orders] rect.run.s-ok").count() >= 2
        assert page.locator("tr[data-asset=payments] rect.run.s-failed").count() >= 2
        assert page.locator("tr[data-asset=orders] path.fire.due").count() >= 20  # hourly, a day ahead
        assert page.locator("tr[data-asset=prices] path.fire.held").count() == 1
        page.screenshot(path=str(DOCS / "ui-timeline.png"), full_page=True)

        # a held asset's page: the hold, in words, and the command that releases it
        page.goto(f"{ui.base}/asset?project={root}&asset=prices")
        page.wait_for_selector("body[data-page=asset]")
        assert page.get_attribute("p.state", "data-mark") == "held"
        assert page.inner_text("p.state .label") == "held: code not yet run by a person"
        assert page.inner_text("p.state code.command") == "croft run prices"

        # a failing asset's page: its own log, its attempts filtered by result, the chart
        page.goto(f"{ui.base}/asset?project={root}&asset=payments")
        page.wait_for_selector("body[data-page=asset]")
        first = page.locator("details.attempt").first
        assert first.get_attribute("data-status") == "failed" and first.get_attribute("open") is not None
        assert "the bank answered 503" in first.inner_text()
        assert page.locator("figure.chart rect.bar").count() >= 5
        page.screenshot(path=str(DOCS / "ui-asset.png"), full_page=True)
        page.select_option("select[name=result]", "ok")
        page.click("form.filters button")
        page.wait_for_selector("body[data-page=asset]")
        statuses = page.eval_on_selector_all("details.attempt", "els => els.map(e => e.dataset.status)")
        assert statuses and set(statuses) <= {"ok", "unchanged"}
        assert errors == []

    if not AXE.is_file():
        cannot(f"axe-core is not installed at {AXE} (scripts/test installs it with npm)")
    with running_ui("--project", str(root), cwd=root) as ui, browser(bypass_csp=True) as context:
        signed = context.new_page()
        signed.goto(ui.url)
        signed.close()
        found = {
            path: axe(context, f"{ui.base}{path}")
            for path in ("/", "/lineage", "/timeline", f"/asset?project={root}&asset=payments")
        }
        assert all(v == [] for v in found.values()), json.dumps(found, indent=1)
