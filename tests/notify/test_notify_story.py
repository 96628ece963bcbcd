"""Notifications over whole runs on a moved clock: the streak rule, and the scheduled-failure story of an
ingest whose API answers 400 (reference §9 "j22" in spirit), with desktop (dry) and a real webhook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from httpserver import serve

from croft.engine.runner import RunOptions, run_assets
from croft.project.config import load_project

SECRET = "sk_live_abcdef123456"


def scheduled(root: Path, when: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("CROFT_NOW", when)
    return run_assets(load_project(root), RunOptions(trigger="schedule", human=False)).envelope()


def by_hand(root: Path, when: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("CROFT_NOW", when)
    return run_assets(load_project(root), RunOptions(selectors=["orders"])).envelope()


def desktop(root: Path) -> list[dict]:
    path = root / ".croft/logs/notifications.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["kind"] == "desktop"]


FLAKY = """
import os

from croft import ingest


@ingest(key="id")
def rows(ctx):
    if os.environ.get("ORDERS_BROKEN"):
        raise RuntimeError("the source is down")
    yield {"id": 1}
"""


def test_three_failing_fires_notify_once_a_day_later_reminds_and_the_first_success_recovers(
    make_project, monkeypatch
):
    root = make_project({"assets/orders.py": FLAKY})
    monkeypatch.setenv("ORDERS_BROKEN", "1")
    for hour in ("09", "10", "11"):
        assert scheduled(root, f"2026-11-02T{hour}:00:00Z", monkeypatch)["ok"] is False
    assert [n["body"][:40] for n in desktop(root)] == ["orders failed in a scheduled run: ASSET_"]
    by_hand(root, "2026-11-02T12:00:00Z", monkeypatch)  # a failing run by hand says nothing
    assert len(desktop(root)) == 1

    scheduled(root, "2026-11-03T09:00:00Z", monkeypatch)  # a day after the first message
    notes = desktop(root)
    assert len(notes) == 2 and notes[1]["event"] == "failed"
    assert notes[1]["body"].startswith("orders still fails in scheduled runs (4 in a row): ASSET_CODE_ERROR")
    scheduled(root, "2026-11-03T10:00:00Z", monkeypatch)
    assert len(desktop(root)) == 2

    monkeypatch.delenv("ORDERS_BROKEN")
    assert scheduled(root, "2026-11-03T11:00:00Z", monkeypatch)["ok"] is True
    scheduled(root, "2026-11-03T12:00:00Z", monkeypatch)
    notes = desktop(root)
    assert [n["event"] for n in notes] == ["failed", "failed", "recovered"]
    assert (
        notes[2]["body"]
        == "orders succeeded again after 5 failed scheduled runs. See it with: croft logs orders"
    )

    monkeypatch.setenv("ORDERS_BROKEN", "1")  # a new streak starts from scratch
    scheduled(root, "2026-11-03T13:00:00Z", monkeypatch)
    assert [n["event"] for n in desktop(root)] == ["failed", "failed", "recovered", "failed"]
    assert desktop(root)[3]["body"].startswith("orders failed in a scheduled run")


def test_a_scheduled_ingest_meeting_a_400_is_told_once_redacted_and_its_recovery_too(
    make_project, monkeypatch
):
    api = {"broken": True}

    def orders(method, path, query, headers, body):
        if api["broken"]:
            return 400, {}, {"error": f"invalid parameter: key {query.get('key')} has no access to 'since'"}
        return 200, {}, [{"id": 1, "total": 10}]

    with serve() as server:
        server.route("GET", "/orders", orders)
        server.route("POST", "/hook", server.reply(204))
        root = make_project(
            {
                "assets/orders.py": f'''
                    from croft import ingest


                    @ingest(schedule="every hour", key="id", secrets=["SHOP_KEY"])
                    def rows(ctx):
                        yield ctx.http.get("{server.base_url}/orders", params={{"key": ctx.secret("SHOP_KEY")}}).json()
                    ''',
                ".env": f"SHOP_KEY={SECRET}\n",
            },
            notify={"webhook": server.url("/hook")},
        )

        first = scheduled(root, "2026-11-02T09:00:00Z", monkeypatch)
        assert first["data"]["steps"][0]["error"]["code"] == "HTTP_ERROR"
        assert len(server.requests_to("/orders")) == 1  # a 400 is not retried, by the client or the runner
        assert server.requests_to("/orders")[0].query["key"] == SECRET
        [note] = desktop(root)
        assert note["runId"] == first["data"]["runId"] and note["title"] == "croft: proj"
        assert "HTTP_ERROR: GET" in note["body"] and "[redacted:SHOP_KEY]" in note["body"]
        [hook] = server.requests_to("/hook")
        payload = hook.json()
        assert (payload["event"], payload["streak"], payload["data"]["runId"]) == (
            "failed",
            1,
            first["data"]["runId"],
        )
        assert payload["data"]["steps"][0]["error"]["code"] == "HTTP_ERROR"
        assert payload["next"] == [{"command": "croft logs orders --failed", "reason": "see why it failed"}]
        assert "has no access" in json.dumps(payload)  # the API's answer travels, with the key hidden
        for text in (hook.body.decode(), (root / ".croft/logs/notifications.ndjson").read_text()):
            assert SECRET not in text and "[redacted:SHOP_KEY]" in text

        for hour in ("10", "11", "12"):  # later fires fail too, quietly
            scheduled(root, f"2026-11-02T{hour}:00:00Z", monkeypatch)
        assert len(server.requests_to("/orders")) == 4
        assert len(desktop(root)) == 1 and len(server.requests_to("/hook")) == 1

        api["broken"] = False
        fixed = by_hand(root, "2026-11-02T12:30:00Z", monkeypatch)
        assert fixed["ok"] is True
        assert [n["event"] for n in desktop(root)] == ["failed", "recovered"]
        recovered = server.requests_to("/hook")[1].json()
        assert (recovered["event"], recovered["streak"], recovered["ok"]) == ("recovered", 4, True)
        assert recovered["data"]["runId"] == fixed["data"]["runId"]

        scheduled(root, "2026-11-02T13:00:00Z", monkeypatch)
        assert len(desktop(root)) == 2 and len(server.requests_to("/hook")) == 2
        logged = [
            line.split(" ", 2)[2] for line in (root / ".croft/logs/notify.log").read_text().splitlines()
        ]
        hook = server.url("/hook").split("/")[
            2
        ]  # no miss; the two webhook messages went out (desktop is dry)
        assert logged == [
            f"sent webhook {hook} (HTTP 204): a failed run",
            f"sent webhook {hook} (HTTP 204): a recovery",
        ]
        assert server.errors == []


def test_a_notifier_that_blows_up_never_fails_the_run(make_project, monkeypatch):
    def boom(*_args, **_kwargs):
        raise RuntimeError(f"bug in the notifier {SECRET}")

    monkeypatch.setattr("croft.notify.send._failed", boom)
    root = make_project({"assets/orders.py": FLAKY, ".env": f"SHOP_KEY={SECRET}\n"})
    monkeypatch.setenv("ORDERS_BROKEN", "1")
    envelope = scheduled(root, "2026-11-02T09:00:00Z", monkeypatch)
    assert envelope["data"]["steps"][0]["status"] == "failed"  # the run's own result, unchanged
    [line] = (root / ".croft/logs/notify.log").read_text().splitlines()
    assert line.endswith("notify: RuntimeError: bug in the notifier [redacted:SHOP_KEY]")
    assert line.split(" ")[1] == envelope["data"]["runId"]
