"""The status page's bounded reads of runs.sqlite: counts per asset, bucket and result; the window's
attempts, at most so many per asset; an asset's attempts filtered by result and trigger."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from croft.core.clock import parse_instant
from croft.history import pagereads
from croft.history.db import open_history


def history(tmp_path: Path) -> sqlite3.Connection:
    conn = open_history(tmp_path / ".croft")
    rows = [  # run, trigger, asset, status, started
        ("r_1", "schedule", "orders", "ok", "2026-03-02T01:00:00.000Z"),
        ("r_2", "schedule", "orders", "failed", "2026-03-02T02:00:00.000Z"),
        ("r_3", "manual", "orders", "ok", "2026-03-02T07:00:00.000Z"),
        ("r_3", "manual", "summary", "skipped", "2026-03-02T07:00:01.000Z"),
        ("r_0", "schedule", "orders", "failed", "2026-02-20T07:00:00.000Z"),  # before the window
    ]
    for run, trigger, asset, status, at in rows:
        conn.execute(
            "INSERT OR IGNORE INTO runs (id, trigger, human, argv, started_at, status) VALUES (?, ?, 0, '[]', ?, 'succeeded')",
            (run, trigger, at),
        )
        conn.execute(
            "INSERT INTO steps (run_id, asset, attempt, status, started_at, finished_at) VALUES (?, ?, 1, ?, ?, ?)",
            (run, asset, status, at, at),
        )
    return conn


def test_buckets_count_each_result_in_its_six_hours(tmp_path: Path) -> None:
    conn = history(tmp_path)
    found = pagereads.step_buckets(conn, parse_instant("2026-03-02T00:00:00Z"), 6 * 3600)
    assert sorted(found["orders"]) == [(0, "failed", 1), (0, "ok", 1), (1, "ok", 1)]
    assert found["summary"] == [(1, "skipped", 1)]


def test_the_window_keeps_the_newest_per_asset(tmp_path: Path) -> None:
    conn = history(tmp_path)
    found = pagereads.window_steps(conn, parse_instant("2026-03-01T00:00:00Z"), 2)
    assert [s["runId"] for s in found["orders"]] == ["r_3", "r_2"]
    assert found["orders"][0]["trigger"] == "manual"


def test_an_assets_attempts_filter_by_result_and_trigger(tmp_path: Path) -> None:
    conn = history(tmp_path)
    every = pagereads.asset_attempts(conn, "orders")
    assert [a["runId"] for a in every] == ["r_3", "r_2", "r_1", "r_0"]
    failed = pagereads.asset_attempts(conn, "orders", statuses=("failed", "crashed"))
    assert [a["runId"] for a in failed] == ["r_2", "r_0"]
    by_hand = pagereads.asset_attempts(conn, "orders", trigger="manual")
    scheduled = pagereads.asset_attempts(conn, "orders", trigger="schedule", limit=1)
    assert [a["runId"] for a in by_hand] == ["r_3"] and [a["runId"] for a in scheduled] == ["r_2"]


def test_an_agents_runs_are_their_own_filter_and_not_a_persons(tmp_path: Path) -> None:
    conn = history(tmp_path)
    conn.execute(
        "INSERT INTO runs (id, trigger, human, argv, started_at, status)"
        " VALUES ('r_4', 'agent', 0, '[]', '2026-03-02T08:00:00.000Z', 'succeeded')"
    )
    conn.execute(
        "INSERT INTO steps (run_id, asset, attempt, status, started_at, finished_at)"
        " VALUES ('r_4', 'orders', 1, 'ok', '2026-03-02T08:00:00.000Z', '2026-03-02T08:00:01.000Z')"
    )
    by_agent = pagereads.asset_attempts(conn, "orders", trigger="agent")
    by_hand = pagereads.asset_attempts(conn, "orders", trigger="manual")
    assert [a["runId"] for a in by_agent] == ["r_4"] and [a["runId"] for a in by_hand] == ["r_3"]
