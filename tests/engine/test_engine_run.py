"""The run engine against a real local HTTP server: cursors, retries, checks, staleness, skips."""

from __future__ import annotations

import pytest
from enginekit import croft, cursor, history, step_log, table
from httpserver import serve

ORDERS = """
from croft import ingest


@ingest(key="id", incremental="updated_at", checks=["total >= 0"])
def rows(ctx):
    page = 1
    while True:
        body = ctx.http.get("{base}/orders", params={{"since": ctx.since, "page": page}}).json()
        yield body["data"]
        if not body["more"]:
            return
        page += 1
"""

REVENUE = """
-- key: customer
SELECT customer, sum(total) AS revenue FROM orders GROUP BY customer
"""


class Shop:
    """A paginated orders API that filters on ``since`` (inclusive), two rows a page."""

    def __init__(self) -> None:
        self.orders = [
            {"id": 1, "customer": "ada", "total": 10, "updated_at": "2026-11-01T10:00:00Z"},
            {"id": 2, "customer": "bo", "total": 20, "updated_at": "2026-11-02T10:00:00Z"},
            {"id": 3, "customer": "ada", "total": 30, "updated_at": "2026-11-03T10:00:00Z"},
        ]

    def __call__(self, method, path, query, headers, body):
        since = query.get("since") or ""
        page = int(query.get("page", "1"))
        rows = sorted((o for o in self.orders if o["updated_at"] >= since), key=lambda o: o["updated_at"])
        return 200, {}, {"data": rows[(page - 1) * 2 : page * 2], "more": page * 2 < len(rows)}


@pytest.fixture
def waits(monkeypatch):
    recorded: list[float] = []
    monkeypatch.setattr("croft.core.clock.pause", recorded.append)
    return recorded


@pytest.fixture
def shop_project(make_project, monkeypatch):
    monkeypatch.setenv("CROFT_RETRY_DELAYS", "0,0")

    def make(server, orders=ORDERS, **extra):
        return make_project(
            {"assets/orders.py": orders.format(base=server.base_url), "assets/revenue.sql": REVENUE, **extra}
        )

    return make


def test_a_second_run_sends_since_and_loads_only_new_or_changed_rows(shop_project, waits):
    shop = Shop()
    with serve() as server:
        server.route("GET", "/orders", shop)
        root = shop_project(server)
        code, first = croft(root, "run")
        assert code == 0, first
        assert [r["id"] for r in table(root, "orders")] == [1, 2, 3]
        assert cursor(root, "orders") == "2026-11-03T10:00:00Z"
        stamps = {r["id"]: r["_loaded_at"] for r in table(root, "orders")}
        assert server.requests[0].query.get("since") is None  # first run: no cursor yet
        assert len(server.requests_to("/orders")) == 2  # two pages

        shop.orders[1] = {**shop.orders[1], "total": 25, "updated_at": "2026-11-04T10:00:00Z"}
        shop.orders.append({"id": 4, "customer": "cy", "total": 5, "updated_at": "2026-11-05T10:00:00Z"})
        server.requests.clear()
        code, second = croft(root, "run")
        assert code == 0, second

    assert server.requests[0].query["since"] == "2026-11-03T09:59:59Z"  # saved cursor minus 1 s lookback
    step = second["data"]["steps"][0]
    assert step["rows"] == {"in": 3, "added": 1, "updated": 1, "unchanged": 1, "deleted": 0}
    after = {r["id"]: r for r in table(root, "orders")}
    assert after[1]["_loaded_at"] == stamps[1] and after[3]["_loaded_at"] == stamps[3]
    assert after[2]["_loaded_at"] > stamps[2] and after[2]["total"] == 25
    assert cursor(root, "orders") == "2026-11-05T10:00:00Z"
    assert {r["customer"]: r["revenue"] for r in table(root, "revenue")} == {"ada": 40, "bo": 25, "cy": 5}


def test_429_with_retry_after_is_waited_out_then_succeeds(shop_project, waits):
    with serve() as server:
        server.route(
            "GET",
            "/orders",
            server.sequence([(429, {"Retry-After": "7"}, {}), (200, {}, {"data": [], "more": False})]),
        )
        root = shop_project(server)
        code, out = croft(root, "run", "orders", "--only")
    assert code == 0, out
    assert waits == [7.0]
    assert len(server.requests) == 2


def test_500_then_success_is_one_ok_attempt(shop_project, waits):
    with serve() as server:
        server.route(
            "GET",
            "/orders",
            server.sequence(
                [
                    (500, {}, "boom"),
                    (
                        200,
                        {},
                        {
                            "data": [{"id": 1, "customer": "a", "total": 1, "updated_at": "2026-01-01"}],
                            "more": False,
                        },
                    ),
                ]
            ),
        )
        root = shop_project(server)
        code, out = croft(root, "run", "orders", "--only")
    assert code == 0, out
    assert out["data"]["steps"][0]["attempt"] == 1 and out["data"]["steps"][0]["status"] == "ok"
    assert table(root, "orders")[0]["id"] == 1


def test_404_is_not_retried_and_skips_the_downstream_transform_with_the_reason(shop_project, waits):
    with serve() as server:
        server.route("GET", "/orders", server.reply(404, {"error": "no such shop"}))
        root = shop_project(server)
        code, out = croft(root, "run", "orders")
    assert code == 1
    assert len(server.requests) == 1
    failed, skipped = out["data"]["steps"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "HTTP_ERROR"
    assert failed["error"]["details"]["status"] == 404 and not failed["error"].get("retryable")
    assert skipped["asset"] == "revenue" and skipped["status"] == "skipped"
    assert skipped["skippedBecause"].startswith("input orders failed")
    rows = history(root, "SELECT asset, attempt, status, reason FROM steps ORDER BY asset")
    assert rows == [
        {"asset": "orders", "attempt": 1, "status": "failed", "reason": "requested"},
        {"asset": "revenue", "attempt": 0, "status": "skipped", "reason": skipped["skippedBecause"]},
    ]
    assert out["problems"][0]["code"] == "HTTP_ERROR"
    assert {"command": "croft logs orders --failed", "reason": "see why it failed"} in out["next"]


def test_a_retryable_failure_gets_two_more_attempts_each_its_own_row(shop_project, waits):
    with serve() as server:
        server.route("GET", "/orders", server.reply(503, "down"))
        root = shop_project(server)
        code, _out = croft(root, "run", "orders", "--only")
    assert code == 1
    assert len(server.requests) == 3 * 4  # three attempts, each with the client's own four tries
    attempts = history(root, "SELECT attempt, status FROM steps WHERE asset = 'orders' ORDER BY attempt")
    assert attempts == [{"attempt": n, "status": "failed"} for n in (1, 2, 3)]
    assert waits.count(0.0) == 2  # CROFT_RETRY_DELAYS=0,0 between the attempts


def test_a_failing_check_writes_nothing_and_moves_no_cursor(shop_project, waits):
    shop = Shop()
    with serve() as server:
        server.route("GET", "/orders", shop)
        root = shop_project(server)
        croft(root, "run")
        before, saved = table(root, "orders"), cursor(root, "orders")
        shop.orders.append({"id": 9, "customer": "zed", "total": -5, "updated_at": "2026-11-09T10:00:00Z"})
        code, out = croft(root, "run", "orders")
    assert code == 3
    assert out["problems"][0]["code"] == "CHECK_FAILED"
    assert table(root, "orders") == before and cursor(root, "orders") == saved


def test_a_transform_is_rebuilt_only_when_its_input_changed(shop_project, waits):
    shop = Shop()
    with serve() as server:
        server.route("GET", "/orders", shop)
        root = shop_project(server)
        croft(root, "run")
        _, again = croft(root, "run")  # the API returns the same rows: orders is unchanged
        assert [s["status"] for s in again["data"]["steps"]] == ["unchanged", "skipped"]
        assert again["data"]["steps"][1]["reason"] == "up to date"
        shop.orders.append({"id": 4, "customer": "cy", "total": 5, "updated_at": "2026-11-05T10:00:00Z"})
        _code, changed = croft(root, "run")
    assert [s["status"] for s in changed["data"]["steps"]] == ["ok", "ok"]
    assert changed["data"]["steps"][1]["reason"] == "input orders has new data"


def test_a_transform_whose_code_changed_is_stale_and_says_why(shop_project, waits):
    with serve() as server:
        server.route("GET", "/orders", Shop())
        root = shop_project(server)
        croft(root, "run")
        (root / "assets" / "revenue.sql").write_text(REVENUE.replace("sum(total)", "max(total)"))
        _code, status = croft(root, "status")
    revenue = next(a for a in status["data"]["assets"] if a["asset"] == "revenue")
    assert revenue["stale"] and revenue["staleReasons"][0]["code"] == "code_changed"
    assert not revenue["approved"]


def test_a_run_by_a_person_approves_the_code_it_ran(shop_project, waits):
    with serve() as server:
        server.route("GET", "/orders", Shop())
        root = shop_project(server)
        croft(root, "run")
    approved = history(root, "SELECT asset, approved_code_hash FROM schedule_state ORDER BY asset")
    hashes = history(root, "SELECT asset, code_hash FROM steps ORDER BY asset")
    assert [(r["asset"], r["approved_code_hash"]) for r in approved] == [
        (r["asset"], r["code_hash"]) for r in hashes
    ]


def test_preview_shows_rows_and_changes_but_commits_nothing(shop_project, waits):
    with serve() as server:
        server.route("GET", "/orders", Shop())
        root = shop_project(server)
        code, out = croft(root, "preview", "orders")
    assert code == 0, out
    step = out["data"]["steps"][0]
    assert step["rows"]["added"] == 3 and [r["id"] for r in step["sample"]] == [1, 2, 3]
    assert not [r for r in history(root, "SELECT * FROM catalog")]
    assert cursor(root, "orders") is None
    assert history(root, "SELECT approved_code_hash FROM schedule_state")[0]["approved_code_hash"]


def test_an_unknown_asset_is_refused_with_a_did_you_mean(shop_project):
    with serve() as server:
        root = shop_project(server)
        code, out = croft(root, "run", "ordres")
    assert code == 2
    assert out["problems"][0]["code"] == "UNKNOWN_ASSET" and out["problems"][0]["suggestion"] == "orders"


def test_a_code_error_in_the_asset_is_reported_at_its_line(make_project):
    root = make_project(
        {
            "assets/broken.py": """
        from croft import ingest


        @ingest()
        def rows(ctx):
            yield {"id": 1}
            raise ValueError("bad page")
        """
        }
    )
    code, out = croft(root, "run")
    assert code == 1
    error = out["data"]["steps"][0]["error"]
    assert error["code"] == "ASSET_CODE_ERROR" and error["line"] == 7 and "bad page" in error["message"]
    assert len(history(root, "SELECT * FROM steps")) == 1  # deterministic: not retried


def test_a_step_that_makes_no_progress_times_out(make_project, monkeypatch):
    import threading

    release = threading.Event()
    with serve() as server:
        server.route("GET", "/slow", lambda *a: (release.wait(5), (200, {}, {}))[1])
        root = make_project(
            {
                "assets/slow.py": f"""
            from croft import ingest


            @ingest(timeout="0.3s", retries=0)
            def rows(ctx):
                ctx.http.get("{server.base_url}/slow")
                yield {{"id": 1}}
            """
            }
        )
        code, out = croft(root, "run")
        release.set()
    assert code == 1
    assert out["data"]["steps"][0]["error"]["code"] == "TIMEOUT"


def test_a_python_transform_reads_its_inputs_and_is_written_as_a_diff(make_project):
    root = make_project(
        {
            "assets/numbers.py": """
                from croft import ingest


                @ingest(key="n")
                def rows(ctx):
                    yield [{"n": n} for n in range(1, 5)]
                """,
            "assets/squares.py": """
                from croft import transform


                @transform(inputs=["numbers"], key="n")
                def rows(ctx):
                    for row in ctx.rows("numbers"):
                        yield {"n": row["n"], "square": row["n"] ** 2}
                """,
        }
    )
    code, out = croft(root, "run")
    assert code == 0, out
    assert [(r["n"], r["square"]) for r in table(root, "squares")] == [(1, 1), (2, 4), (3, 9), (4, 16)]
    stamps = [r["_loaded_at"] for r in table(root, "squares")]
    code, again = croft(root, "run", "squares")
    assert again["data"]["steps"][0]["status"] == "unchanged"
    assert [r["_loaded_at"] for r in table(root, "squares")] == stamps


def test_a_python_transform_may_read_only_what_it_declares(make_project):
    root = make_project(
        {
            "assets/a.py": 'from croft import ingest\n\n\n@ingest()\ndef rows(ctx):\n    yield {"x": 1}\n',
            "assets/b.py": 'from croft import ingest\n\n\n@ingest()\ndef rows(ctx):\n    yield {"y": 1}\n',
            "assets/t.py": """
                from croft import transform


                @transform(inputs=["a"])
                def rows(ctx):
                    yield from ctx.rows("b")
                """,
        }
    )
    code, out = croft(root, "run")
    assert code == 2
    failed = next(s for s in out["data"]["steps"] if s["asset"] == "t")
    assert failed["error"]["code"] == "ASSET_INVALID" and "not among its inputs" in failed["error"]["message"]


def test_croft_now_reaches_history_stamps_logs_and_run_ids(make_project, monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-07-04T15:30:00Z")
    root = make_project(
        {
            "assets/one.py": 'from croft import ingest\n\n\n@ingest(key="id")\ndef rows(ctx):\n    yield {"id": 1}\n'
        },
        timezone="America/New_York",
    )
    code, out = croft(root, "run")
    assert code == 0, out
    assert out["data"]["runId"].startswith("r_0704_1130_")  # the minute in the project's zone
    run = history(root, "SELECT started_at, finished_at FROM runs")[0]
    assert run == {"started_at": "2026-07-04T15:30:00.000Z", "finished_at": "2026-07-04T15:30:00.000Z"}
    assert history(root, "SELECT started_at FROM steps") == [{"started_at": "2026-07-04T15:30:00.000Z"}]
    assert table(root, "one")[0]["_loaded_at"].startswith("2026-07-04T15:30:00")
    assert step_log(root, "one").splitlines()[0].startswith("2026-07-04T15:30:00.000Z ")


def test_a_bug_in_croft_fails_the_step_with_internal_error_not_a_running_row(make_project, monkeypatch):
    root = make_project(
        {"assets/one.py": 'from croft import ingest\n\n\n@ingest()\ndef rows(ctx):\n    yield {"id": 1}\n'}
    )

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("croft.engine.warehouse.Warehouse.write_ingest", broken)
    code, out = croft(root, "run")
    assert code == 1
    assert out["problems"][0]["code"] == "INTERNAL_ERROR" and "disk on fire" in out["problems"][0]["message"]
    assert history(root, "SELECT status FROM steps") == [{"status": "failed"}]
    assert history(root, "SELECT status FROM runs") == [{"status": "failed"}]


def test_preview_of_a_sql_transform_shows_the_rows_it_would_build(shop_project, waits):
    with serve() as server:
        server.route("GET", "/orders", Shop())
        root = shop_project(server)
        croft(root, "run", "orders", "--only")
        code, out = croft(root, "preview", "revenue")
    assert code == 0, out
    step = out["data"]["steps"][0]
    assert sorted((r["customer"], r["revenue"]) for r in step["sample"]) == [("ada", 40), ("bo", 20)]
    assert step["rows"]["added"] == 2
    assert not _has_table(root, "revenue") or table(root, "revenue") == []  # nothing was kept


def _has_table(root, name):
    import sqlite3

    conn = sqlite3.connect(root / "warehouse.sqlite")
    try:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None
    finally:
        conn.close()


def test_two_files_for_one_asset_fail_the_run_while_the_rest_still_runs(make_project):
    one = 'from croft import ingest\n\n\n@ingest()\ndef rows(ctx):\n    yield {"id": 1}\n'
    root = make_project(
        {"assets/one.py": one, "assets/dup.py": one, "assets/more/dup.sql": "SELECT 1 AS x\n"}
    )
    code, out = croft(root, "run")
    assert code == 2
    assert [p["code"] for p in out["problems"]] == ["NAME_CONFLICT"]
    assert [(s["asset"], s["status"]) for s in out["data"]["steps"]] == [("one", "ok")]
