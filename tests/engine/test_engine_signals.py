"""Ctrl-C and SIGTERM wherever they land, with real processes: the lease wait, the pause before a retry,
a second Ctrl-C while the first is being cleaned up, and a runaway SQL query stopped by its timeout."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from collections.abc import Callable

import pytest
from enginekit import history, spawn
from httpserver import serve


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except sqlite3.Error:
            pass  # the history may not exist yet
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def ingest(url: str, extra: str = "") -> str:
    return f"""
from croft import ingest


@ingest(key="id"{extra})
def rows(ctx):
    yield ctx.http.get("{url}", retries=0).json()
"""


def finished(child) -> tuple[int, dict, str]:
    out, err = child.communicate(timeout=60)
    return child.returncode, json.loads(out), err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_the_lease_wait_is_an_interrupted_run(make_project, sig):
    entered, release = threading.Event(), threading.Event()

    def slow(*args):
        entered.set()
        release.wait(30)
        return 200, {}, [{"id": 1}]

    with serve() as server:
        server.route("GET", "/items", slow)
        root = make_project({"assets/items.py": ingest(server.url("/items"))})
        holder = spawn(root, "run")
        assert entered.wait(30)
        waiter = spawn(root, "run", env={"CROFT_LEASE_WAIT_MS": "60000"})
        wait_for(lambda: len(history(root, "SELECT id FROM runs")) == 2, "the second run to start waiting")
        time.sleep(0.3)  # inside the lease wait's sleep
        waiter.send_signal(sig)
        code, envelope, err = finished(waiter)
        release.set()
        assert finished(holder)[0] == 0
    assert code == 130, err
    assert "Traceback" not in err and "Aborted" not in err
    assert envelope["ok"] is False and envelope["problems"][0]["code"] == "INTERRUPTED"
    assert "lease" in envelope["problems"][0]["message"]
    statuses = [r["status"] for r in history(root, "SELECT status FROM runs ORDER BY started_at")]
    assert statuses == ["succeeded", "interrupted"]


def test_a_signal_in_the_pause_before_a_retry_is_an_interrupted_run(make_project):
    with serve() as server:
        server.route("GET", "/items", lambda *a: (503, {}, {"error": "down"}))
        root = make_project({"assets/items.py": ingest(server.url("/items"))})
        child = spawn(root, "run", env={"CROFT_RETRY_DELAYS": "60"})
        wait_for(
            lambda: history(root, "SELECT status FROM steps WHERE attempt = 1") == [{"status": "failed"}],
            "the first attempt to fail",
        )
        time.sleep(0.3)  # now in the 60 s pause
        child.send_signal(signal.SIGTERM)
        code, envelope, err = finished(child)
    assert code == 130, err
    assert envelope["data"]["status"] == "interrupted"
    assert "INTERRUPTED" in {p["code"] for p in envelope["problems"]}
    assert history(root, "SELECT status FROM runs") == [{"status": "interrupted"}]
    assert history(root, "SELECT attempt FROM steps") == [{"attempt": 1}]  # no second attempt started
    assert history(root, "SELECT COUNT(*) AS n FROM leases") == [{"n": 0}]


def test_a_second_ctrl_c_stops_at_once_and_the_run_is_still_recorded_interrupted(make_project, tmp_path):
    started = tmp_path / "started"
    root = make_project(
        {
            "assets/slow.py": f"""
            import time
            from pathlib import Path

            from croft import ingest


            @ingest(key="id")
            def rows(ctx):
                Path({str(started)!r}).write_text("yes")
                time.sleep(60)
                yield {{"id": 1}}
            """
        }
    )
    child = spawn(root, "run")
    wait_for(started.exists, "the step to start")
    # Hold the history's write lock, so the first Ctrl-C's clean-up is stuck recording the step.
    lock = sqlite3.connect(root / ".croft" / "runs.sqlite", isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    child.send_signal(signal.SIGINT)
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    time.sleep(0.5)
    lock.execute("ROLLBACK")
    lock.close()
    code, envelope, err = finished(child)
    assert code == 130, err
    assert "Traceback" not in err
    assert envelope["problems"][0]["code"] == "INTERRUPTED"
    assert "stopped at once" in envelope["problems"][0]["message"]
    assert envelope["data"]["runId"]
    assert history(root, "SELECT status FROM runs") == [{"status": "interrupted"}]
    assert history(root, "SELECT status FROM steps") == [{"status": "interrupted"}]
    assert history(root, "SELECT COUNT(*) AS n FROM leases") == [{"n": 0}]


def test_a_runaway_recursive_query_fails_as_timeout(make_project):
    root = make_project(
        {
            "assets/runaway.sql": """
            -- timeout: 1s
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
            SELECT max(x) AS m FROM c
            """
        }
    )
    started = time.monotonic()
    code, envelope, err = finished(spawn(root, "run", "runaway"))
    assert time.monotonic() - started < 30
    assert code == 1, err
    [problem] = envelope["problems"]
    assert problem["code"] == "TIMEOUT" and problem["asset"] == "runaway"
    [step] = history(root, "SELECT status, error FROM steps")
    assert step["status"] == "failed" and json.loads(step["error"])["code"] == "TIMEOUT"


def test_ctrl_c_reaches_a_long_query(make_project):
    root = make_project(
        {
            "assets/runaway.sql": """
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
            SELECT max(x) AS m FROM c
            """
        }
    )
    child = spawn(root, "run", "runaway")
    wait_for(lambda: history(root, "SELECT status FROM steps") == [{"status": "running"}], "the query to run")
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    code, envelope, err = finished(child)
    assert envelope["data"]["status"] == "interrupted"
    assert code == 130, err
    assert history(root, "SELECT status FROM steps") == [{"status": "interrupted"}]
