"""Tables changed behind croft's back, full refreshes and backfills, against a local paginated HTTP API with
real SQLite and real croft processes: a dropped table is seen everywhere and held from the scheduler, a
full refresh brings every row back (and a kill half-way changes nothing), a backfill killed after ten
chunks resumes at the eleventh and ends with exactly the source's rows, and the cursor never moves back."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from enginekit import cursor, history, spawn, step_log
from httpserver import serve
from schedulekit import croft_json, env_at, schedule_on, tick
from waiting import wait_for

pytestmark = pytest.mark.processes

START = "2026-12-01T00:00:00Z"
PAGE = 7

INGEST = """
from croft import ingest


@ingest(schedule="every hour", key="id", incremental="updated_at")
def widgets(ctx):
    params = {{"since": ctx.since}}
    if ctx.window is not None:
        params["until"] = ctx.window.end.strftime("%Y-%m-%dT%H:%M:%SZ")
    page = 1
    while True:
        body = ctx.http.get("{url}", params={{**params, "page": page}}, retries=0).json()
        yield body["rows"]
        if not body["next"]:
            return
        page += 1
"""
NAMES = """
-- key: id
SELECT id, upper(name) AS name FROM widgets
"""


class Source:
    """The API's rows (five a day through November 2026), served a page at a time; a test can make one
    request wait (``block``) until it lets it go, so a signal lands while croft is mid-load."""

    def __init__(self) -> None:
        self.rows = [
            {"id": i, "name": f"w{i}", "updated_at": f"2026-11-{1 + i // 5:02d}T{(i % 5) * 3:02d}:00:00Z"}
            for i in range(150)
        ]
        self.block_when: Any = None
        self.entered = threading.Event()
        self.release = threading.Event()

    def handler(self, method: str, path: str, query: dict[str, Any], headers: Any, body: bytes) -> Any:
        if self.block_when is not None and self.block_when(query):
            self.block_when = None
            self.entered.set()
            self.release.wait(60)
        since, until = query.get("since"), query.get("until")
        rows = sorted(
            (
                r
                for r in self.rows
                if (not since or r["updated_at"] >= since) and (not until or r["updated_at"] < until)
            ),
            key=lambda r: (r["updated_at"], r["id"]),
        )
        page = int(query.get("page", 1))
        return 200, {}, {"rows": rows[(page - 1) * PAGE : page * PAGE], "next": page * PAGE < len(rows)}

    def as_table(self) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r["name"], r["updated_at"]) for r in self.rows)


def _project(make_project: Any, url: str) -> Path:
    return make_project(
        {"assets/widgets.py": INGEST.format(url=url), "assets/names.sql": NAMES}, timezone="UTC"
    )


def _rows(root: Path, table: str, columns: str = "*") -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(root / "warehouse.sqlite")
    try:
        return [tuple(r) for r in conn.execute(f'SELECT {columns} FROM "{table}" ORDER BY rowid')]
    finally:
        conn.close()


def _snapshot(root: Path) -> dict[str, Any]:
    """The old table, its bookkeeping (the cursor among it) and the transform, every column and stamp."""
    conn = sqlite3.connect(root / "warehouse.sqlite")
    try:
        return {
            "widgets": list(conn.execute('SELECT * FROM "widgets" ORDER BY rowid')),
            "names": list(conn.execute('SELECT * FROM "names" ORDER BY rowid')),
            "bookkeeping": list(conn.execute("SELECT * FROM _croft_assets ORDER BY name")),
            "writes": list(conn.execute("SELECT * FROM _croft_writes ORDER BY loaded_at")),
        }
    finally:
        conn.close()


def _drop(root: Path, table: str) -> None:
    conn = sqlite3.connect(root / "warehouse.sqlite")
    try:
        conn.execute(f'DROP TABLE "{table}"')
        conn.commit()
    finally:
        conn.close()


def _codes(problems: list[dict[str, Any]]) -> list[str]:
    return [p["code"] for p in problems]


def _notifications(root: Path) -> list[dict[str, Any]]:
    path = root / ".croft" / "logs" / "notifications.ndjson"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_dropped_table_is_seen_everywhere_held_from_the_scheduler_and_restored_by_a_full_refresh(
    make_project: Any,
) -> None:
    source = Source()
    with serve() as server:
        server.route("GET", "/widgets", source.handler)
        root = _project(make_project, server.url("/widgets"))
        code, first = croft_json(root, START, "run")
        assert code == 0, first
        before_cursor = cursor(root, "widgets")
        assert before_cursor == "2026-11-30T12:00:00Z"
        schedule_on(root, "2026-12-01T00:05:00Z")
        _drop(root, "widgets")

        # status: the table is missing, not "fresh", and the fix is the full refresh
        tick(root, "2026-12-01T00:10:00Z")  # a heartbeat, so status speaks of the tables alone
        code, status = croft_json(root, "2026-12-01T00:10:00Z", "status")
        assert code == 0, status
        widgets = next(a for a in status["data"]["assets"] if a["asset"] == "widgets")
        assert widgets["table"]["state"] == "missing" and widgets["table"]["rows"] == 150
        missing = next(p for p in status["problems"] if p["code"] == "TABLE_MISSING")
        assert missing["asset"] == "widgets"
        assert missing["fix"]["command"] == "croft run widgets --full-refresh"

        # a plain run refuses to fetch from the old cursor: no request, nothing written
        asked = len(server.requests)
        code, refused = croft_json(root, "2026-12-01T00:15:00Z", "run", "widgets")
        assert code == 1, refused
        step = refused["data"]["steps"][0]
        assert step["status"] == "failed" and step["error"]["code"] == "TABLE_MISSING"
        assert len(server.requests) == asked
        assert not (root / "warehouse.sqlite").exists() or "widgets" not in {
            r[0] for r in sqlite3.connect(root / "warehouse.sqlite").execute("SELECT name FROM sqlite_master")
        }

        # the scheduled run is held, not run, and told once
        asked = len(server.requests)
        data = tick(root, "2026-12-01T01:00:30Z")
        assert [s["assets"] for s in data["spawned"]] == [["widgets"]]
        run_id = data["spawned"][0]["runId"]
        assert history(root, "SELECT * FROM steps WHERE run_id = ? AND asset = 'widgets'", run_id) == []
        assert len(server.requests) == asked
        told = [n for n in _notifications(root) if "TABLE_MISSING" in n.get("body", "")]
        assert len(told) == 1, _notifications(root)
        for later in ("2026-12-01T01:01:30Z", "2026-12-01T02:00:30Z"):
            data = tick(root, later)
            assert data["spawned"] == []
            assert [(h["asset"], h["code"]) for h in data["held"]] == [("widgets", "TABLE_MISSING")]
        assert len([n for n in _notifications(root) if "TABLE_MISSING" in n.get("body", "")]) == 1
        assert len(server.requests) == asked

        # schedule status and doctor say so too
        code, sched = croft_json(root, "2026-12-01T02:01:00Z", "schedule", "status")
        assert "TABLE_MISSING" in _codes(sched["problems"]), sched
        row = next(r for r in sched["data"]["assets"] if r["asset"] == "widgets")
        assert row["held"]["code"] == "TABLE_MISSING"
        assert row["held"]["release"] == "croft run widgets --full-refresh"
        code, doctor = croft_json(root, "2026-12-01T02:01:00Z", "doctor")
        assert "TABLE_MISSING" in _codes(doctor["problems"]), doctor

        # the full refresh brings every row back, and the transform with it, in one run
        code, done = croft_json(root, "2026-12-01T02:05:00Z", "run", "widgets", "--full-refresh", "--yes")
        assert code == 0, done
        # the transform was rebuilt from the reloaded rows (the same rows: unchanged, not skipped)
        assert [(s["asset"], s["status"]) for s in done["data"]["steps"]] == [
            ("widgets", "ok"),
            ("names", "unchanged"),
        ]
        assert done["data"]["steps"][0]["fullRefresh"] == {"rowsReplaced": 0, "rows": 150}
        assert sorted(_rows(root, "widgets", "id, name, updated_at")) == source.as_table()
        assert sorted(_rows(root, "names", "id, name")) == sorted((i, f"W{i}") for i in range(150))
        assert cursor(root, "widgets") == before_cursor
        code, status = croft_json(root, "2026-12-01T02:06:00Z", "status")
        assert not {"TABLE_MISSING", "TABLE_CHANGED"} & set(_codes(status["problems"])), status
        # and the scheduler runs it again at its next fire
        data = tick(root, "2026-12-01T03:00:30Z")
        assert [s["assets"] for s in data["spawned"]] == [["widgets"]]
        assert data["held"] == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "ctrl-c"])
def test_a_full_refresh_stopped_half_way_leaves_table_cursor_and_transform_as_they_were(
    make_project: Any, sig: signal.Signals
) -> None:
    source = Source()
    with serve() as server:
        server.route("GET", "/widgets", source.handler)
        root = _project(make_project, server.url("/widgets"))
        code, first = croft_json(root, START, "run")
        assert code == 0, first
        # the source changes, so a finished refresh would change the table
        for row in source.rows[:40]:
            row["name"] += "-renamed"
        before = _snapshot(root)
        source.block_when = lambda query: query.get("page") == "5"
        child = spawn(root, "run", "widgets", "--full-refresh", "--yes", env=env_at("2026-12-01T01:00:00Z"))
        try:
            wait_for(source.entered.is_set, "the full refresh to ask for its fifth page")
            wait_for(lambda: "page=4" in step_log(root, "widgets"), "four pages to be staged")
            child.send_signal(sig)
            out, err = child.communicate(timeout=60)
        finally:
            source.release.set()
            if child.poll() is None:
                child.kill()
        if sig == signal.SIGINT:
            assert child.returncode == 130, (out, err)
            assert json.loads(out)["problems"][0]["code"] == "INTERRUPTED"
        else:
            assert child.returncode == -signal.SIGKILL
        assert _snapshot(root) == before
        # and a refresh that is let finish takes the source as it is now
        code, done = croft_json(root, "2026-12-01T01:10:00Z", "run", "widgets", "--full-refresh", "--yes")
        assert code == 0, done
        assert sorted(_rows(root, "widgets", "id, name, updated_at")) == source.as_table()
        assert ("W0-RENAMED",) in _rows(root, "names", "name")


def test_a_backfill_killed_after_ten_chunks_resumes_at_chunk_eleven_and_ends_with_the_sources_rows(
    make_project: Any,
) -> None:
    source = Source()
    with serve() as server:
        server.route("GET", "/widgets", source.handler)
        root = _project(make_project, server.url("/widgets"))
        code, first = croft_json(root, START, "run")
        assert code == 0, first
        cursor_before = cursor(root, "widgets")
        # what an incremental run never sees: rows that arrived late with old stamps, and corrections
        # made without moving the stamp
        source.rows += [
            {"id": 1000 + d, "name": f"late{d}", "updated_at": f"2026-11-{d:02d}T05:00:00Z"}
            for d in (3, 15, 27)
        ]
        for row in source.rows:
            if row["id"] in (10, 100, 140):
                row["name"] = f"fixed{row['id']}"
        code, plain = croft_json(root, "2026-12-01T00:30:00Z", "run", "widgets")
        assert code == 0, plain
        assert sorted(_rows(root, "widgets", "id, name, updated_at")) != source.as_table()

        window = ["--from", "2026-11-01", "--to", "2026-11-30", "--chunk", "1d"]
        schedule_on(root, "2026-12-01T00:40:00Z")
        source.block_when = lambda query: query.get("since") == "2026-11-11T00:00:00Z"
        child = spawn(root, "run", "widgets", *window, env=env_at("2026-12-01T01:00:00Z"))
        try:
            wait_for(source.entered.is_set, "the backfill to reach its eleventh chunk")
            # while it runs, the scheduled run of the same ingest waits: held, still due (the tick is not
            # waited on: the backfill itself is a run still going)
            data = tick(root, "2026-12-01T01:00:30Z", wait=False)
            assert data["spawned"] == []
            assert [(h["asset"], h["code"]) for h in data["held"]] == [("widgets", "ASSET_BUSY")]
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=60)
        finally:
            source.release.set()
        book = json.loads(
            history(root, "SELECT value FROM settings WHERE key = 'backfill.widgets'")[0]["value"]
        )
        assert book["done"] == list(range(10))

        asked = len(server.requests)
        code, resumed = croft_json(root, "2026-12-01T01:10:00Z", "run", "widgets", *window)
        assert code == 0, resumed
        sinces = [r.query.get("since") for r in server.requests[asked:]]
        assert sinces[0] == "2026-11-11T00:00:00Z"
        assert min(sinces) == "2026-11-11T00:00:00Z"
        assert len(set(sinces)) == 20  # chunks 11 to 30, one each
        step = resumed["data"]["steps"][0]
        assert step["backfill"] == {
            "window": {"start": "2026-11-01T00:00:00Z", "end": "2026-12-01T00:00:00Z"},
            "total": 30,
            "loaded": 20,
            "doneEarlier": 10,
        }
        log = step_log(root, "widgets")
        assert "starting at chunk 11" in log and "chunk 30/30" in log
        # `croft logs` shows the chunks: the resumed ones in this run, the first ten in the killed one
        code, logs = croft_json(root, "2026-12-01T01:11:00Z", "logs", "widgets")
        shown = json.dumps(logs)
        assert "chunk 11/30 2026-11-11T00:00:00Z..2026-11-12T00:00:00Z" in shown
        assert "chunk 10/30 2026-11-10T00:00:00Z..2026-11-11T00:00:00Z" in shown
        assert sorted(_rows(root, "widgets", "id, name, updated_at")) == source.as_table()
        assert cursor(root, "widgets") == cursor_before  # never earlier
        assert history(root, "SELECT value FROM settings WHERE key = 'backfill.widgets'") == []
        # the transform downstream rebuilt in the same run
        assert ("FIXED10",) in _rows(root, "names", "name") and ("LATE15",) in _rows(root, "names", "name")


def test_a_backfill_gives_the_window_and_never_moves_the_cursor_back(make_project: Any) -> None:
    source = Source()
    with serve() as server:
        server.route("GET", "/widgets", source.handler)
        root = _project(make_project, server.url("/widgets"))
        assert croft_json(root, START, "run")[0] == 0
        before = cursor(root, "widgets")
        asked = len(server.requests)
        code, done = croft_json(
            root, "2026-12-01T01:00:00Z", "run", "widgets", "--from", "2026-11-05", "--to", "2026-11-06"
        )
        assert code == 0, done
        queries = [r.query for r in server.requests[asked:]]
        assert {(q["since"], q["until"]) for q in queries} == {
            ("2026-11-05T00:00:00Z", "2026-11-07T00:00:00Z")
        }
        assert done["data"]["steps"][0]["cursor"] == {
            "before": before,
            "after": before,
            "sinceUsed": "2026-11-05T00:00:00Z",
        }
        assert cursor(root, "widgets") == before
        # a window reaching past the cursor moves it forward, never back
        source.rows.append({"id": 500, "name": "new", "updated_at": "2026-12-01T00:30:00Z"})
        code, done = croft_json(root, "2026-12-01T02:00:00Z", "run", "widgets", "--from", "2026-11-30")
        assert code == 0, done
        assert cursor(root, "widgets") == "2026-12-01T00:30:00Z"
