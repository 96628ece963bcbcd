"""The run engine as real processes: a SIGKILL mid-write, two runs at once, Ctrl-C, and secrets on disk."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
from pathlib import Path

import pytest
from enginekit import croft, cursor, history, spawn, step_log, table
from httpserver import serve

pytestmark = pytest.mark.processes

INGEST = """
from croft import ingest


@ingest(key="id", incremental="n"{extra})
def rows(ctx):
    yield ctx.http.get("{base}/items", params={{"since": ctx.since}}{auth}).json()
"""


def items_project(make_project, server, extra="", auth="", files=None):
    return make_project(
        {"assets/items.py": INGEST.format(base=server.base_url, extra=extra, auth=auth), **(files or {})}
    )


def test_a_run_killed_mid_write_leaves_data_and_cursor_as_before_and_is_marked_crashed(make_project):
    batch = [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
    with serve() as server:
        server.route("GET", "/items", lambda *a: (200, {}, batch))
        root = items_project(make_project, server)
        assert croft(root, "run")[0] == 0
        before, saved = table(root, "items"), cursor(root, "items")
        batch[:] = [{"id": 2, "n": 20}, {"id": 3, "n": 30}]
        child = spawn(root, "run", env={"CROFT_FAULT": "before_commit"})
        child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert table(root, "items") == before and cursor(root, "items") == saved
    assert history(root, "SELECT status FROM runs ORDER BY started_at DESC LIMIT 1") == [
        {"status": "running"}
    ]
    assert history(root, "SELECT COUNT(*) AS n FROM leases") == [{"n": 1}]

    _, logs = croft(root, "logs", "--runs")  # the first command that looks settles it
    assert logs["data"]["runs"][0]["status"] == "crashed"
    code, status = croft(root, "status")
    assert code == 0
    run = history(root, "SELECT status, id FROM runs ORDER BY started_at DESC LIMIT 1")[0]
    assert run["status"] == "crashed"
    step = history(root, "SELECT status, error FROM steps WHERE run_id = ?", run["id"])[0]
    assert step["status"] == "crashed" and json.loads(step["error"])["code"] == "RUN_CRASHED"
    assert history(root, "SELECT COUNT(*) AS n FROM leases") == [{"n": 0}]
    items = next(a for a in status["data"]["assets"] if a["asset"] == "items")
    assert items["lastRun"]["status"] == "crashed"


def test_two_runs_of_one_asset_never_both_write_and_the_second_names_the_holder(make_project):
    entered, release = threading.Event(), threading.Event()

    def slow(*args):
        entered.set()
        release.wait(30)
        return 200, {}, [{"id": 1, "n": 1}]

    with serve() as server:
        server.route("GET", "/items", slow)
        root = items_project(make_project, server)
        first = spawn(root, "run", "items")
        assert entered.wait(30), first.stderr.read() if first.poll() is not None else "first run never asked"
        code, second = croft(root, "run", "items", env={"CROFT_LEASE_WAIT_MS": "300"})
        release.set()
        out, _ = first.communicate(timeout=60)
    assert code == 4
    busy = second["problems"][0]
    first_run = json.loads(out)["data"]["runId"]
    assert busy["code"] == "ASSET_BUSY" and first_run in busy["message"]
    assert busy["details"]["holders"][0]["runId"] == first_run
    assert first.returncode == 0
    assert len(server.requests) == 1  # the second run never fetched, let alone wrote
    writes = sqlite3.connect(root / "warehouse.sqlite").execute("SELECT run_id FROM _croft_writes").fetchall()
    assert writes == [(first_run,)]


def test_a_run_by_hand_meeting_a_run_names_the_asset_asked_for_is_busy_not_failed_and_can_wait(make_project):
    """issue 21 (5): ``croft run items`` while another run holds items and its reader item_totals (which
    sorts first by name): ASSET_BUSY names items and the holding run, offers --wait, and is stored busy."""
    entered, release = threading.Event(), threading.Event()

    def slow(*args):
        entered.set()
        release.wait(30)
        return 200, {}, [{"id": 1, "n": 1}]

    totals = {"assets/item_totals.sql": "-- key: id\nSELECT id, n * 10 AS m FROM items\n"}
    with serve() as server:
        server.route("GET", "/items", slow)
        root = items_project(make_project, server, files=totals)
        first = spawn(root, "run", "items")
        assert entered.wait(30), first.stderr.read() if first.poll() is not None else "first run never asked"
        code, second = croft(root, "run", "items", env={"CROFT_LEASE_WAIT_MS": "300"})
        waiting = spawn(root, "run", "items", "--wait", env={"CROFT_LEASE_WAIT_MS": "0"})
        release.set()
        out, _ = first.communicate(timeout=60)
        waited, _ = waiting.communicate(timeout=60)
    first_run = json.loads(out)["data"]["runId"]
    assert code == 4 and second["data"]["status"] == "busy"
    busy = second["problems"][0]
    assert busy["code"] == "ASSET_BUSY" and busy["asset"] == "items"
    assert busy["message"].startswith(f"items (and item_totals) is being written by run {first_run}")
    assert busy["fix"]["command"] == "croft run items --wait"
    stored = history(root, "SELECT status FROM runs WHERE id = ?", second["data"]["runId"])
    assert stored == [{"status": "busy"}]  # the refusal is no failed run in the history
    assert waiting.returncode == 0 and json.loads(waited)["data"]["status"] == "succeeded"


def test_ctrl_c_marks_the_run_and_step_interrupted_and_exits_130(make_project):
    entered, release = threading.Event(), threading.Event()

    def slow(*args):
        entered.set()
        release.wait(30)
        return 200, {}, []

    with serve() as server:
        server.route("GET", "/items", slow)
        root = items_project(make_project, server)
        child = spawn(root, "run")
        assert entered.wait(30)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        release.set()
    assert child.returncode == 130, err
    assert json.loads(out)["problems"][0]["code"] == "INTERRUPTED"
    assert history(root, "SELECT status FROM runs") == [{"status": "interrupted"}]
    assert history(root, "SELECT status FROM steps") == [{"status": "interrupted"}]
    assert history(root, "SELECT COUNT(*) AS n FROM leases") == [{"n": 0}]


SECRET = "sk_live_abcdef123456"


@pytest.mark.parametrize("status", [200, 401])
def test_a_secret_never_reaches_a_file_the_run_wrote_or_its_output(make_project, status):
    def echo(method, path, query, headers, body):
        return (
            status,
            {},
            ([{"id": 1, "n": 1, "note": "ok"}] if status == 200 else {"error": f"bad key {query['key']}"}),
        )

    with serve() as server:
        server.route("GET", "/items", echo)
        root = make_project(
            {
                "assets/items.py": f'''
                    from croft import ingest


                    @ingest(key="id", secrets=["SHOP_KEY"])
                    def rows(ctx):
                        key = ctx.secret("SHOP_KEY")
                        ctx.log("using key", key)
                        yield ctx.http.get("{server.base_url}/items", params={{"key": key}}).json()
                    ''',
                ".env": f"SHOP_KEY={SECRET}\n",
            }
        )
        proc = spawn(root, "run")
        out, err = proc.communicate(timeout=60)
        _, logs = croft(root, "logs")
        _, runs_view = croft(root, "logs", "--runs")
    assert server.requests[0].query["key"] == SECRET  # the API did get it
    assert proc.returncode == (0 if status == 200 else 1), err
    for text in (out, err, json.dumps(logs), json.dumps(runs_view)):
        assert SECRET not in text
    written = [p for p in (root / ".croft").rglob("*") if p.is_file()]
    assert any(p.name == "runs.sqlite" for p in written)  # the step's log is kept there once it ended
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    assert "[redacted:SHOP_KEY]" in step_log(root, "items")
    if status == 401:
        assert "[redacted:SHOP_KEY]" in json.loads(out)["problems"][0]["message"] + json.dumps(
            json.loads(out)["problems"][0]["details"]
        )


def test_a_missing_declared_secret_fails_the_step_with_secret_missing(make_project):
    with serve() as server:
        root = items_project(make_project, server, extra=', secrets=["NOPE_KEY"]')
        code, out = croft(root, "run")
    assert code == 2
    problem = out["problems"][0]
    assert (
        problem["code"] == "SECRET_MISSING" and "NOPE_KEY" in problem["message"] and ".env" in problem["hint"]
    )
    assert Path(root / ".croft" / "runs.sqlite").exists()
