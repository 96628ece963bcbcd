"""``croft ui`` in real headless Chromium (Debian's, driven by playwright): the token visit, Run now live
without a reload, Pause 2h and Resume, a held asset, and an asset page following a running log. (The
screenshots for docs/ui.md are taken by test_ui_pictures.py, over a history at the real clock.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from schedulekit import croft_json
from uikit import browser, running_ui

pytestmark = pytest.mark.processes

ORDERS = """
from croft import ingest


@ingest(schedule="every 5 minutes", key="id", description="Orders from the shop")
def orders(ctx):
    print("fetching orders")
    yield [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
"""
SLOW = """
import pathlib
import time

from croft import ingest

GATE = pathlib.Path(__file__).resolve().parents[1] / "release"


@ingest(key="id", description="Waits for the test to let it finish")
def slow(ctx):
    print("first line", flush=True)
    while not GATE.exists():  # the asset's own wait: the test creates the file when it has seen the line
        time.sleep(0.05)
    print("second line", flush=True)
    yield [{"id": 1}]
"""
SUMMARY = """
-- key: id
-- description: Orders ten times over
SELECT id, n * 10 AS m FROM orders
"""
NOW = "2026-12-01T09:00:00Z"


def project(make_project: Any) -> Path:
    root = make_project(
        {"assets/orders.py": ORDERS, "assets/slow.py": SLOW, "assets/summary.sql": SUMMARY}, timezone="UTC"
    )
    for args in (["run", "orders", "summary"], ["schedule", "on", "--no-os-job"]):
        code, envelope = croft_json(root, NOW, *args)
        assert code == 0, envelope
    return root


def rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("tr.asset", "els => els.map(e => e.dataset.asset)")


def test_the_overview_runs_pauses_resumes_and_shows_a_hold_live(make_project: Any) -> None:
    root = project(make_project)
    with running_ui("--project", str(root), cwd=root) as ui, browser() as context:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.accept()))
        dialogs: list[str] = []
        page.goto(ui.url)
        assert page.url == f"{ui.base}/"  # the token is gone from the address bar
        page.wait_for_selector("body[data-live='1']")
        assert sorted(rows(page)) == ["orders", "slow", "summary"]
        assert page.inner_text("tr[data-asset=orders] .kind") == "ingest · Orders from the shop"
        assert page.get_attribute("tr[data-asset=orders] .phrase", "title") == "*/5 * * * * · UTC"
        assert page.get_attribute(".setting", "data-state") == "on"

        # Run now: the confirm says it approves the code; the run appears live, no reload
        page.evaluate("window.__same = 'this document'")
        page.wait_for_selector("tr[data-asset=orders] svg.strip7")
        before = page.get_attribute("tr[data-asset=orders] svg.strip7", "data-strip")
        page.click("tr[data-asset=orders] a.button.run")
        assert dialogs == [
            "Run orders now? A run you start approves orders's current code for the scheduler, as"
            " “croft run orders” does."
        ]
        # (no wait_for_function: the page's policy refuses the eval it needs, as it should)
        page.wait_for_selector(
            f"tr[data-asset=orders] svg.strip7:not([data-strip='{before}'])", timeout=60_000
        )
        assert "croft run orders: run r_" in page.inner_text("ul.notices")
        runs = croft_json(root, NOW, "logs", "orders", "--runs")[1]["data"]["runs"]
        assert runs[0]["trigger"] == "manual" and runs[0]["human"] is True  # a person's run, as croft run
        assert page.evaluate("window.__same") == "this document"

        # Pause 2h changes the header; Resume undoes it
        page.click("form.pause button")
        page.wait_for_selector(".setting[data-state=paused]")
        assert "paused until" in page.inner_text(".setting") and "(in 2 h)" in page.inner_text(".setting")
        assert croft_json(root, NOW, "schedule", "status")[1]["data"]["scheduling"]["state"] == "paused"
        page.click("form.resume button")
        page.wait_for_selector(".setting[data-state=on]")
        state = croft_json(root, NOW, "schedule", "status")[1]["data"]["scheduling"]
        assert state["state"] == "on" and state["via"] == "serve"

        # an edited asset is held: its row says so and names the command that releases it
        (root / "assets" / "orders.py").write_text(
            ORDERS.replace('print("fetching orders")', 'print("edited")')
        )
        page.wait_for_selector("tr[data-asset=orders][data-mark=held]", timeout=60_000)
        assert page.inner_text("tr[data-asset=orders] .label") == "held: code not yet run by a person"
        assert page.inner_text("tr[data-asset=orders] .command") == "croft run orders"
        assert page.evaluate("window.__same") == "this document"
        assert errors == []


def test_an_asset_page_follows_a_running_log(make_project: Any) -> None:
    root = project(make_project)
    with running_ui("--project", str(root), cwd=root) as ui, browser() as context:
        page = context.new_page()
        page.on("dialog", lambda d: d.accept())
        page.goto(ui.url)
        page.click("tr[data-asset=slow] td.name a")
        page.wait_for_selector("body[data-page=asset][data-live='1']")
        page.evaluate("window.__same = 'this document'")
        page.click("header.top a.button.run")
        going = "details.attempt[data-status=running][open]"
        page.wait_for_selector(f"{going} pre.log:has-text('first line')", timeout=60_000)
        assert "second line" not in page.inner_text(f"{going} pre.log")
        assert page.locator("figure.chart rect.bar.s-running").count() == 1
        (root / "release").write_text("go")
        page.wait_for_selector("details.attempt[data-status=ok][open]", timeout=60_000)
        log = page.inner_text("details.attempt[data-status=ok] pre.log")
        assert "first line" in log and "second line" in log
        assert page.locator("figure.chart rect.bar.s-ok").count() == 1
        assert page.evaluate("window.__same") == "this document"  # followed without a reload


def test_without_javascript_the_page_refreshes_itself_and_its_buttons_are_forms(make_project: Any) -> None:
    root = project(make_project)
    with running_ui("--project", str(root), cwd=root) as ui, browser(javascript=False) as context:
        page = context.new_page()
        page.goto(ui.url)
        assert sorted(rows(page)) == ["orders", "slow", "summary"]
        assert (
            page.locator("noscript meta[http-equiv=refresh]").count() == 1
            or "http-equiv=refresh" in page.content()
        )
        page.click("form.pause button")  # a plain form POST: back to the overview, paused
        page.wait_for_selector(".setting[data-state=paused]")
        page.click("tr[data-asset=orders] a.button.run")  # the confirm is a page of its own
        assert "approves orders's current code" in page.inner_text("main")
        page.click("form button[type=submit]")
        page.wait_for_selector("body[data-page=asset]")
        assert "croft run orders: run r_" in page.inner_text(".notices")
