"""The scheduled-failure story end to end (reference §9 "j22" in spirit): real ``croft tick`` / ``croft run
--due`` processes, CROFT_NOW moving the clock, a real local API and a real local webhook receiver; the
desktop notifications are recorded by CROFT_NOTIFY_DRY (set for every test) in notifications.ndjson."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from httpserver import serve
from schedulekit import croft_json, schedule_on, steps_of, tick

SECRET = "sk_live_abcdef123456"
ORDERS = """
from croft import ingest


@ingest(schedule="every hour", key="id", secrets=["SHOP_KEY"])
def rows(ctx):
    params = {{"key": ctx.secret("SHOP_KEY"), "limit": {limit}}}
    yield ctx.http.get("{base}/orders", params=params).json()
"""


def shop(make_project, server, limit: int) -> Path:
    """The shop project (its key in .env, a webhook to ``server``), scheduled, and run once by a person."""
    server.route("POST", "/hook", server.reply(204))
    root = make_project(
        {
            "assets/orders.py": ORDERS.format(base=server.base_url, limit=limit),
            ".env": f"SHOP_KEY={SECRET}\n",
        },
        notify={"webhook": server.url("/hook")},
    )
    schedule_on(root, "2026-06-01T09:30:00Z")
    assert croft_json(root, "2026-06-01T09:31:00Z", "run")[0] == 0  # the code is approved
    return root


def desktop(root: Path) -> list[dict]:
    path = root / ".croft/logs/notifications.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["kind"] == "desktop"]


def test_a_scheduled_ingest_meeting_a_400_is_told_once_redacted_held_on_edit_and_recovers_by_hand(
    make_project,
):
    api = {"max": 500}

    def orders(method, path, query, headers, body):
        if int(query["limit"]) > api["max"]:  # deterministic: the same request always gets it
            return 400, {}, {"error": f"limit {query['limit']} is over {api['max']} for key {query['key']}"}
        return 200, {}, [{"id": 1, "total": 10}]

    with serve() as server:
        server.route("GET", "/orders", orders)
        root = shop(make_project, server, limit=500)

        # The API lowers its limit: the 11:00 fire (10:00Z) gets a 400, once, and says so once.
        api["max"] = 100
        failing = tick(root, "2026-06-01T10:00:30Z")
        run_id = failing["spawned"][0]["runId"]
        assert [(s["asset"], s["status"]) for s in steps_of(root, run_id)] == [("orders", "failed")]
        assert len(server.requests_to("/orders")) == 2  # the run by hand, then one: a 400 is not retried
        [note] = desktop(root)
        assert (note["event"], note["runId"], note["title"]) == ("failed", run_id, "croft: proj")
        assert note["body"].startswith("orders failed in a scheduled run: HTTP_ERROR")
        assert "[redacted:SHOP_KEY]" in note["body"]
        [hook] = server.requests_to("/hook")
        payload = hook.json()
        assert (payload["event"], payload["streak"], payload["ok"]) == ("failed", 1, False)
        assert payload["data"]["runId"] == run_id
        assert payload["data"]["steps"][0]["error"]["code"] == "HTTP_ERROR"
        assert "is over 100 for key [redacted:SHOP_KEY]" in hook.body.decode()  # the echo, key hidden
        for text in (hook.body.decode(), (root / ".croft/logs/notifications.ndjson").read_text()):
            assert SECRET not in text

        # Later ticks do not run it again before its next fire; that fire fails the same way (one more
        # request) and, being the same streak, says nothing.
        for later in ("2026-06-01T10:01:00Z", "2026-06-01T10:30:00Z"):
            assert tick(root, later)["spawned"] == [], later
        assert len(server.requests_to("/orders")) == 2
        again = tick(root, "2026-06-01T11:00:30Z")
        assert steps_of(root, again["spawned"][0]["runId"])[0]["status"] == "failed"
        assert tick(root, "2026-06-01T11:01:00Z")["spawned"] == []
        assert len(server.requests_to("/orders")) == 3
        assert len(desktop(root)) == 1 and len(server.requests_to("/hook")) == 1

        # The fix is an edit: at the 13:00 fire it is held until a person runs it; a hold notifies nobody.
        path = root / "assets" / "orders.py"
        path.write_text(textwrap.dedent(ORDERS.format(base=server.base_url, limit=100)).lstrip())
        edited = tick(root, "2026-06-01T12:00:30Z")
        assert edited["spawned"] == [] and [h["code"] for h in edited["held"]] == ["SCHEDULE_HELD"]
        assert len(server.requests_to("/orders")) == 3
        assert len(desktop(root)) == 1 and len(server.requests_to("/hook")) == 1

        # The run by hand clears it, and its success is the one "recovered".
        code, fixed = croft_json(root, "2026-06-01T12:05:00Z", "run", "orders")
        assert code == 0 and fixed["ok"]
        assert server.requests_to("/orders")[-1].query["limit"] == "100"
        assert [n["event"] for n in desktop(root)] == ["failed", "recovered"]
        recovered = server.requests_to("/hook")[1].json()
        assert (recovered["event"], recovered["streak"], recovered["ok"]) == ("recovered", 2, True)
        assert recovered["data"]["runId"] == fixed["data"]["runId"]

        # The next fire (14:00, 13:00Z) runs the fixed code as a scheduled run, and nothing more is sent.
        assert tick(root, "2026-06-01T12:30:00Z")["spawned"] == []  # the run by hand covered 13:00
        nxt = tick(root, "2026-06-01T13:00:30Z")
        [(asset, status)] = [(s["asset"], s["status"]) for s in steps_of(root, nxt["spawned"][0]["runId"])]
        assert asset == "orders" and status in ("ok", "unchanged")
        assert len(server.requests_to("/orders")) == 5
        assert server.requests_to("/orders")[-1].query["limit"] == "100"
        assert len(desktop(root)) == 2 and len(server.requests_to("/hook")) == 2
        logged = [
            line.split(" ", 2)[2] for line in (root / ".croft/logs/notify.log").read_text().splitlines()
        ]
        assert len(logged) == 2 and all(line.startswith("sent webhook ") for line in logged)  # no miss
        assert server.errors == []


def test_a_run_the_tick_started_that_died_before_recording_itself_is_told_exactly_once(make_project):
    with serve() as server:
        server.route("GET", "/orders", server.reply(200, [{"id": 1, "total": 10}]))
        root = shop(make_project, server, limit=10)

        started = tick(root, "2026-06-01T10:05:00Z", CROFT_FAULT="before_run")  # the child dies at once
        run_id = started["spawned"][0]["runId"]
        assert desktop(root) == []  # nothing is known yet: the next tick finds it
        _, found = croft_json(root, "2026-06-01T10:06:00Z", "tick")
        assert [p["code"] for p in found["problems"]] == ["RUN_CRASHED"]
        [note] = desktop(root)
        assert (note["event"], note["runId"]) == ("failed", run_id)
        assert note["body"].startswith("orders failed in a scheduled run: RUN_CRASHED")
        assert "its process ended before it recorded the run" in note["body"]
        [hook] = server.requests_to("/hook")
        assert (hook.json()["event"], hook.json()["data"]["runId"]) == ("failed", run_id)

        for later in ("2026-06-01T10:07:00Z", "2026-06-01T10:10:00Z"):  # it waits 15 minutes, quietly
            assert tick(root, later)["spawned"] == []
        assert len(desktop(root)) == 1 and len(server.requests_to("/hook")) == 1

        retry = tick(root, "2026-06-01T10:21:00Z")  # the one more try works: that ends the streak
        assert [s["assets"] for s in retry["spawned"]] == [["orders"]]
        assert [n["event"] for n in desktop(root)] == ["failed", "recovered"]
        assert [h.json()["event"] for h in server.requests_to("/hook")] == ["failed", "recovered"]
        assert server.errors == []
