"""A day with a laptop: the scheduler end to end, with real ``croft tick`` / ``croft run --due`` processes,
a real local HTTP API and CROFT_NOW moving the clock through the day (Europe/London, UTC+1 in June)."""

from __future__ import annotations

import textwrap

from httpserver import serve
from schedulekit import croft_json, runs_of, schedule_on, state_of, steps_of, tick

ITEMS = """
from croft import ingest


@ingest(schedule="every hour", key="id", incremental="updated")
def rows(ctx):
    params = {{"since": ctx.since}} if ctx.since else {{}}
    yield ctx.http.get("{base}/items", params=params).json()
"""
TOTALS = """
-- key: id
SELECT id, updated, qty * 2 AS double_qty FROM items
"""


def test_a_day_with_a_laptop(make_project):
    data = [{"id": 1, "qty": 1, "updated": "2026-06-01T08:00:00Z"}]
    answer = {"status": 200}

    def items(method, path, query, headers, body):
        if answer["status"] != 200:
            return answer["status"], {}, {"error": "bad request"}
        since = query.get("since")
        return 200, {}, [row for row in data if since is None or row["updated"] > since]

    with serve() as server:
        server.route("GET", "/items", items)
        root = make_project(
            {"assets/items.py": ITEMS.format(base=server.base_url), "assets/totals.sql": TOTALS}
        )
        schedule_on(root, "2026-06-01T09:30:00Z")

        # 1. New code is held until a person runs it.
        held = tick(root, "2026-06-01T10:05:00Z")
        assert held["spawned"] == [] and {h["asset"] for h in held["held"]} == {"items"}
        assert held["held"][0]["code"] == "SCHEDULE_HELD" and server.requests_to("/items") == []
        code, by_hand = croft_json(root, "2026-06-01T10:10:00Z", "run")
        assert code == 0 and len(server.requests_to("/items")) == 1

        # 2. The hourly tick runs the ingest and the transform that reads it, in one scheduled run,
        #    and the ingest sends its cursor.
        data.append({"id": 2, "qty": 5, "updated": "2026-06-01T10:30:00Z"})
        hourly = tick(root, "2026-06-01T11:00:20Z")
        assert [s["assets"] for s in hourly["spawned"]] == [["items"]]
        run_id = hourly["spawned"][0]["runId"]
        assert [(s["asset"], s["status"]) for s in steps_of(root, run_id)] == [
            ("items", "ok"),
            ("totals", "ok"),
        ]
        # the saved cursor (08:00:00) minus the default one-second lookback
        assert server.requests_to("/items")[-1].query == {"since": "2026-06-01T07:59:59Z"}
        assert tick(root, "2026-06-01T11:30:00Z")["spawned"] == []

        # 3. An edit holds it again; 4. a run by hand releases it.
        path = root / "assets" / "items.py"
        path.write_text(textwrap.dedent(ITEMS.format(base=server.base_url)) + "\nPAGE_SIZE = 100\n")
        edited = tick(root, "2026-06-01T12:00:10Z")
        assert edited["spawned"] == [] and edited["held"][0]["code"] == "SCHEDULE_HELD"
        assert "code edited" in edited["held"][0]["message"] and "new:" not in edited["held"][0]["message"]
        requests = len(server.requests_to("/items"))
        assert croft_json(root, "2026-06-01T12:05:00Z", "run", "items")[0] == 0
        assert len(server.requests_to("/items")) == requests + 1
        assert tick(root, "2026-06-01T12:10:00Z")["spawned"] == []  # the run by hand covered 13:00

        # 5. Four hours asleep: status shows the missed fires, then one catch-up run.
        _, status = croft_json(root, "2026-06-01T16:10:00Z", "status")
        items_view = next(a for a in status["data"]["assets"] if a["asset"] == "items")["schedule"]
        assert items_view["due"] and items_view["missedFires"] == 4
        assert items_view["dueReason"] == "fired at 17:00; 4 missed fires run once"
        assert items_view["nextFireAt"] == "2026-06-01T18:00+01:00"
        assert items_view["lastFireAt"] == "2026-06-01T12:00+01:00"
        assert status["data"]["scheduling"]["effective"] == "on"
        requests = len(server.requests_to("/items"))
        awake = tick(root, "2026-06-01T16:10:00Z")
        assert len(awake["spawned"]) == 1 and len(server.requests_to("/items")) == requests + 1
        assert tick(root, "2026-06-01T16:11:00Z")["spawned"] == []
        assert state_of(root, "items")["last_fire_at"] == "2026-06-01T16:00:00.000Z"

        # 6. A 400 from the API is one request, not retried; the next tick does not run it again before
        #    its next fire.
        answer["status"] = 400
        requests = len(server.requests_to("/items"))
        failing = tick(root, "2026-06-01T17:00:30Z")
        run_id = failing["spawned"][0]["runId"]
        steps = [(s["asset"], s["status"]) for s in steps_of(root, run_id)]
        assert steps == [("items", "failed"), ("totals", "skipped")]
        assert len(server.requests_to("/items")) == requests + 1
        assert next(r for r in runs_of(root) if r["id"] == run_id)["status"] == "failed"
        for later in ("2026-06-01T17:01:00Z", "2026-06-01T17:30:00Z", "2026-06-01T17:59:00Z"):
            assert tick(root, later)["spawned"] == [], later
        assert len(server.requests_to("/items")) == requests + 1
        answer["status"] = 200
        assert len(tick(root, "2026-06-01T18:00:05Z")["spawned"]) == 1
        assert len(server.requests_to("/items")) == requests + 2
    assert by_hand["ok"]
