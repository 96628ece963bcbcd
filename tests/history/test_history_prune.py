"""Bounded history: old runs, steps and step logs go; what status and the scheduler need stays."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from enginekit import croft, history

from croft.core.identity import ProcessIdentity
from croft.core.problems import CroftError
from croft.history import leases, runs, state
from croft.history.prune import prune_history

WHO = ProcessIdentity(pid=4242, start="12345", boot="boot-a")


def add_run(
    conn: sqlite3.Connection,
    monkeypatch: pytest.MonkeyPatch,
    run_id: str,
    day: int,
    steps: dict[str, str],
    logs: Path | None = None,
) -> None:
    """A finished run started on 2026-01-<day> with one step per asset, in the given status."""
    monkeypatch.setenv("CROFT_NOW", f"2026-01-{day:02d}T09:00:00Z")
    runs.create_run(conn, run_id=run_id, trigger="manual", human=True, argv=["run"], who=WHO)
    for asset, status in steps.items():
        log = logs / f"{run_id}.{asset}.log" if logs else None
        if log:
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("line\n")
        runs.start_step(
            conn, run_id=run_id, asset=asset, attempt=1, reason="requested", code_hash=None, log_path=str(log)
        )
        runs.finish_step(conn, run_id=run_id, asset=asset, attempt=1, status=status)
    runs.finish_run(conn, run_id, "failed" if "failed" in steps.values() else "succeeded", {})


def run_ids(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT id FROM runs")}


def test_old_runs_go_but_what_status_and_the_scheduler_need_stays(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    logs = tmp_path / "state" / "logs"
    add_run(conn, monkeypatch, "r_a_old", 1, {"orders": "ok", "daily": "ok"}, logs)
    add_run(conn, monkeypatch, "r_b_spawned", 2, {"orders": "ok"}, logs)
    add_run(conn, monkeypatch, "r_c_failed_start", 3, {"orders": "ok"}, logs)
    add_run(conn, monkeypatch, "r_d_lastgood", 4, {"orders": "ok"}, logs)
    add_run(conn, monkeypatch, "r_e_latest_fail", 5, {"orders": "failed"}, logs)
    add_run(conn, monkeypatch, "r_f_recent", 28, {"orders": "ok"}, logs)
    add_run(conn, monkeypatch, "r_g_leased", 6, {"other": "ok"}, logs)
    add_run(conn, monkeypatch, "r_h_other_latest", 7, {"other": "ok"}, logs)
    (logs / "r_a_old").mkdir()  # a scheduled run's own folder (process records) goes with it
    (logs / "r_a_old" / "process.log").write_text("spawned\n")
    state.put_setting(conn, "schedule.spawned", [{"runId": "r_b_spawned", "assets": ["orders"], "at": "x"}])
    state.put_setting(conn, "schedule.failedStarts", {"r_c_failed_start": {"assets": ["orders"]}})
    state.put_setting(conn, "scheduling", {"state": "on", "via": None})
    assert leases.acquire(conn, ["other"], "r_g_leased", WHO) == []

    # "daily" last ran in r_a_old, and orders' last good step is r_f_recent, so r_d_lastgood may go once
    # r_f_recent exists. r_e_latest_fail is not orders' latest step (r_f_recent is): it goes too.
    pruned = prune_history(conn, now=datetime(2026, 2, 1, tzinfo=UTC), keep_days=10, logs_dir=logs)
    assert run_ids(conn) == {
        "r_a_old",  # daily's latest (and only) run
        "r_b_spawned",
        "r_c_failed_start",
        "r_f_recent",
        "r_g_leased",
        "r_h_other_latest",
    }
    assert (pruned.runs, pruned.steps, pruned.logs) == (2, 2, 2)
    assert {p.name for p in logs.iterdir()} >= {"r_a_old.orders.log", "r_f_recent.orders.log", "r_a_old"}
    assert (
        not (logs / "r_d_lastgood.orders.log").exists() and not (logs / "r_e_latest_fail.orders.log").exists()
    )
    orphans = conn.execute("SELECT COUNT(*) FROM steps WHERE run_id NOT IN (SELECT id FROM runs)").fetchone()
    assert tuple(orphans) == (0,)
    # Nothing old is left that may go: a second pass removes nothing.
    again = prune_history(conn, now=datetime(2026, 2, 1, tzinfo=UTC), keep_days=10, logs_dir=logs)
    assert again.runs == 0


def test_the_latest_run_of_an_asset_and_its_last_good_step_survive_any_age(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_run(conn, monkeypatch, "r_1", 1, {"orders": "ok"})
    add_run(conn, monkeypatch, "r_2", 2, {"orders": "failed"})
    add_run(conn, monkeypatch, "r_3", 3, {"orders": "failed"})
    prune_history(conn, now=datetime(2027, 1, 1, tzinfo=UTC), keep_days=90)
    assert run_ids(conn) == {"r_1", "r_3"}
    assert runs.last_ok_step(conn, "orders")["run_id"] == "r_1"  # type: ignore[index]
    assert runs.latest_step(conn, "orders")["run_id"] == "r_3"  # type: ignore[index]


def test_a_run_prunes_by_the_keep_days_of_croft_json(make_project) -> None:
    ingest = """
        from croft import ingest


        @ingest(key="x")
        def one(ctx):
            yield {"x": 1}
    """
    root = make_project({"assets/one.py": ingest}, history={"keepDays": 30})
    assert croft(root, "run", env={"CROFT_NOW": "2026-01-01T09:00:00Z"})[0] == 0
    assert croft(root, "run", env={"CROFT_NOW": "2026-01-02T09:00:00Z"})[0] == 0
    first = history(root, "SELECT id FROM runs ORDER BY started_at")[0]["id"]
    assert croft(root, "run", env={"CROFT_NOW": "2026-01-20T09:00:00Z"})[0] == 0
    assert len(history(root, "SELECT id FROM runs")) == 3  # within 30 days: all kept
    assert croft(root, "run", env={"CROFT_NOW": "2026-03-01T09:00:00Z"})[0] == 0
    left = [r["id"] for r in history(root, "SELECT id FROM runs ORDER BY started_at")]
    assert first not in left and len(left) == 1  # only the run that just ended is the latest
    assert [p.name for p in (root / ".croft" / "logs").iterdir()] == []  # ended steps keep no file
    assert history(root, "SELECT run_id FROM step_logs") == [{"run_id": left[0]}]  # the pruned logs went


@pytest.mark.parametrize("value", [0, -1, "90", 1.5, True])
def test_a_bad_keep_days_is_config_invalid(make_project, value) -> None:
    root = make_project({}, history={"keepDays": value})
    code, out = croft(root, "validate")
    assert code != 0
    problem = out["problems"][0]
    assert problem["code"] == "CONFIG_INVALID" and "history.keepDays" in problem["message"]
    assert json.dumps(value) in problem["message"]


LOGS_QUERIES = {
    "runs": lambda c: runs.list_runs(c),
    "runs --failed": lambda c: runs.list_runs(c, failed=True),
    "runs --since": lambda c: runs.list_runs(c, since="2026-01-03T00:00:00Z"),
    "runs of an asset --failed": lambda c: runs.list_runs(c, asset="orders", failed=True),
    "steps": lambda c: runs.list_steps(c),
    "steps --failed": lambda c: runs.list_steps(c, failed=True),
    "steps of an asset": lambda c: runs.list_steps(c, asset="orders"),
    "steps of an asset --failed": lambda c: runs.list_steps(c, asset="orders", failed=True),
    "steps of a run": lambda c: runs.list_steps(c, run_id="r_a"),
    "run id prefix": lambda c: runs.get_run(c, "r_"),
}


@pytest.mark.parametrize("name", sorted(LOGS_QUERIES))
def test_every_logs_query_reads_through_an_index(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """No full scan of runs or steps: the time of `croft logs` does not grow with the history."""
    add_run(conn, monkeypatch, "r_a", 1, {"orders": "ok"})
    add_run(conn, monkeypatch, "r_b", 2, {"orders": "failed"})
    sent: list[str] = []
    conn.set_trace_callback(sent.append)
    with contextlib.suppress(CroftError):  # an ambiguous prefix is a USAGE error; its query ran all the same
        LOGS_QUERIES[name](conn)
    conn.set_trace_callback(None)
    selects = [sql for sql in sent if sql.lstrip().upper().startswith("SELECT")]
    assert selects
    for sql in selects:
        plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql.replace("?", "NULL"))]
        full = [line for line in plan if line.startswith("SCAN") and ("runs" in line or "steps" in line)]
        assert all("INDEX" in line for line in full), (sql, plan)
        if name not in ("run id prefix", "steps of a run"):  # these sort only the rows they match
            # Sorting is allowed only over the few rows already limited by an ordered index read.
            sorts = [i for i, line in enumerate(plan) if line == "USE TEMP B-TREE FOR ORDER BY"]
            assert all(plan[i - 1].startswith("SCAN (subquery") for i in sorts), (sql, plan)
