"""Ctrl-C and SIGTERM wherever they land, with real processes: the lease wait, the pause before a retry,
a second Ctrl-C while the first is being cleaned up, and a runaway SQL query stopped by its timeout."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from enginekit import history, spawn, step_log
from httpserver import serve
from waiting import wait_for

pytestmark = pytest.mark.processes

# `python -m croft ARGS`, except that the child writes MARKER the moment its run reaches POINT, the place
# the test's signal must land. The child says it is there, so the test never guesses with a sleep. Each
# point wraps the one croft function the run calls there (looked up on its module at each call):
#   lease-wait   the lease was found held (the run is inside its lease wait from here on)
#   retry-pause  the pause before the next attempt begins
#   in-query     SQLite called the step's progress handler: the statement is running
AT_POINT = """
import sys
from pathlib import Path

marker, point, *args = sys.argv[1:]


def say(module, name, reached):
    inner = getattr(module, name)

    def watched(*a, **k):
        value = inner(*a, **k)
        if reached(value):
            Path(marker).write_text(point)
        return value

    setattr(module, name, watched)


if point == "lease-wait":
    from croft.history import leases

    say(leases, "acquire", lambda held: bool(held))
elif point == "retry-pause":
    from croft.core import clock

    inner = clock.pause

    def pause(seconds):
        Path(marker).write_text(point)
        inner(seconds)

    clock.pause = pause
elif point == "in-query":
    from croft.engine import stopping

    say(stopping, "requested", lambda stop: True)
else:
    raise SystemExit(f"no such point: {point}")
sys.argv = ["croft", *args]
from croft.cli.main import main

main()
"""


def spawn_to(
    root: Path, point: str, marker: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """A real ``croft ARGS --json`` process in ``root`` that writes ``marker`` once it reaches ``point``."""
    return subprocess.Popen(
        [sys.executable, "-c", AT_POINT, str(marker), point, *args, "--json"],
        cwd=root,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ingest(url: str, extra: str = "") -> str:
    return f"""
from croft import ingest


@ingest(key="id"{extra})
def rows(ctx):
    yield ctx.http.get("{url}", retries=0).json()
"""


def _logged(root: Path, asset: str) -> str:
    """The log of ``asset``'s step so far ("" until the step has one): its file while the step runs,
    its row in the history once it ended."""
    return step_log(root, asset)


def finished(child) -> tuple[int, dict, str]:
    out, err = child.communicate(timeout=60)
    return child.returncode, json.loads(out), err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_the_lease_wait_is_an_interrupted_run(make_project, tmp_path, sig):
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
        waiting = tmp_path / "waiting"
        waiter = spawn_to(root, "lease-wait", waiting, "run", env={"CROFT_LEASE_WAIT_MS": "60000"})
        wait_for(waiting.exists, "the second run to say it is waiting for the lease")
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


def test_a_signal_in_the_pause_before_a_retry_is_an_interrupted_run(make_project, tmp_path):
    with serve() as server:
        server.route("GET", "/items", lambda *a: (503, {}, {"error": "down"}))
        root = make_project({"assets/items.py": ingest(server.url("/items"))})
        pausing = tmp_path / "pausing"
        child = spawn_to(root, "retry-pause", pausing, "run", env={"CROFT_RETRY_DELAYS": "60"})
        wait_for(pausing.exists, "the run to say it is in the 60 s pause after the first attempt failed")
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
    # The step's log says "interrupted" once the first Ctrl-C has been handled, just before the clean-up
    # blocks on the lock (for at most the history's 5 s busy timeout). Two SIGINTs both still pending
    # would be handled as one, so the second is sent only now. A signal sent is pending at once: the
    # clean-up meets it as soon as the rollback lets its write through.
    wait_for(lambda: _logged(root, "slow").endswith(" interrupted\n"), "the step's log to say interrupted")
    child.send_signal(signal.SIGINT)
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
    code, envelope, err = finished(spawn(root, "run", "runaway"))
    assert code == 1, err
    [problem] = envelope["problems"]
    assert problem["code"] == "TIMEOUT" and problem["asset"] == "runaway"
    [step] = history(root, "SELECT status, error FROM steps")
    assert step["status"] == "failed" and json.loads(step["error"])["code"] == "TIMEOUT"


def test_ctrl_c_reaches_a_long_query(make_project, tmp_path):
    root = make_project(
        {
            "assets/runaway.sql": """
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
            SELECT max(x) AS m FROM c
            """
        }
    )
    querying = tmp_path / "querying"
    child = spawn_to(root, "in-query", querying, "run", "runaway")
    wait_for(querying.exists, "the run to say its query is running inside SQLite")
    child.send_signal(signal.SIGINT)
    code, envelope, err = finished(child)
    assert envelope["data"]["status"] == "interrupted"
    assert code == 130, err
    assert history(root, "SELECT status FROM steps") == [{"status": "interrupted"}]
