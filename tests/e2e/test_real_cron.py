"""End to end against a real cron daemon: schedule on writes the line, cron runs `croft tick --all`
within the minute, the heartbeat arrives within 70 s, the due ingest (approved by a run by hand first,
since the scheduler never runs code nobody ran) runs as a scheduled run against a local HTTP API, and
schedule off removes the line while an unrelated line stays byte for byte. Paths contain spaces (and a
%, which cron would otherwise eat).

CROFT_NOW cannot move the cron daemon's clock, so the ingest runs "every minute": due at real time at the
first tick after the run by hand.

Needs root (cron daemons run as root) and the `cron` program; `scripts/test` installs it when it can.
The test starts `cron -f` itself when no cron daemon runs, and stops only what it started. Its crontab
lines are its own; whatever root's crontab held before is put back exactly. Root's crontab is one per
machine, so runs of this test (from any checkout) take turns through a lock file.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from httpserver import TestServer, serve

from croft.scheduler.jobs.crontab import cron_daemon_running

REPO = Path(__file__).resolve().parents[2]
UNRELATED = "# croft e2e: an unrelated line  with  two spaces and 100% kept\n"
INGEST = """\
from croft import ingest

@ingest(schedule="every minute", key="id")
def rows(ctx):
    yield ctx.http.get("{url}").json()
"""
TURNS = Path("/tmp/croft-cron-e2e.lock")


def _why_not() -> str | None:
    if os.environ.get("CI") == "true":
        return None  # in CI this must run; a missing piece fails below instead of skipping
    if os.geteuid() != 0:
        return "a cron daemon can only be started by root, and this test runs as another user"
    if shutil.which("cron") is None or shutil.which("crontab") is None:
        return "cron is not installed (scripts/test installs it when run as root with apt-get)"
    return None


@pytest.fixture
def cron_daemon() -> Iterator[None]:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    turns = open(TURNS, "a")  # noqa: SIM115 (held for the whole test, closed below)
    fcntl.flock(turns, fcntl.LOCK_EX)
    before = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    had_table = before.returncode == 0
    started = None
    if not cron_daemon_running():
        started = subprocess.Popen(["cron", "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        assert started.poll() is None, "cron -f exited at once"
    try:
        yield
    finally:
        if had_table:
            subprocess.run(["crontab", "-"], input=before.stdout, text=True, check=True)
        else:
            subprocess.run(["crontab", "-r"], capture_output=True, check=False)
        if started is not None:
            started.terminate()
            started.wait(timeout=10)
        turns.close()


def _croft(python: Path, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "croft", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=200
    )


def _scheduled_runs(project: Path) -> list[tuple[str, str]]:
    path = project / ".croft" / "runs.sqlite"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(
            "SELECT id, status FROM runs WHERE trigger = 'schedule' ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def test_real_cron_ticks_the_project_runs_the_due_ingest_and_off_keeps_the_other_lines(
    cron_daemon: None, tmp_path: Path
) -> None:
    with serve() as server:
        _journey(server, tmp_path)


def _journey(http_server: TestServer, tmp_path: Path) -> None:
    served: list[int] = []

    def items(*_: object) -> tuple[int, dict[str, str], object]:
        served.append(len(served) + 1)
        return 200, {}, [{"id": 1, "call": len(served)}, {"id": 2, "call": len(served)}]

    http_server.route("GET", "/items", items)
    base = tmp_path / "e2e dir"
    base.mkdir()
    venv = base / "venv link"
    venv.symlink_to(REPO / ".venv")  # an interpreter path with a space that still finds its venv
    python = venv / "bin" / "python"
    home = base / "croft home 100%"
    project = base / "my project"
    project.mkdir()
    (project / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    (project / "assets").mkdir()
    (project / "assets" / "orders.py").write_text(INGEST.format(url=http_server.url("/items")))
    label = f"dev.croft.e2e{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROFT_")}
    env |= {"CROFT_HOME": str(home), "CROFT_JOB_LABEL": label, "CROFT_NOTIFY_DRY": "1"}
    by_hand = _croft(python, ["run", "orders", "--json"], env, project)  # a person ran it: not held
    assert by_hand.returncode == 0, by_hand.stdout + by_hand.stderr
    assert served == [1]
    # an unrelated line of the test's own, already in the table
    current = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    table = (current.stdout if current.returncode == 0 else "") + UNRELATED
    subprocess.run(["crontab", "-"], input=table, text=True, check=True)

    on = _croft(python, ["schedule", "on", "--backend", "crontab", "--json"], env, project)
    assert on.returncode == 0, on.stdout + on.stderr
    data = json.loads(on.stdout)["data"]
    assert data["job"]["backend"] == "crontab" and data["job"]["python"] == str(python)
    written = subprocess.run(["crontab", "-l"], capture_output=True, text=True, check=True).stdout
    assert written.startswith(table) and f"# croft:{label}" in written
    assert "\\%" in written  # the % in CROFT_HOME is escaped for cron
    log = home / "logs" / "tick.log"
    # `schedule on` itself waited for the heartbeat (CROFT_HEARTBEAT_WAIT_MS default: 70 s)
    assert data["firstTick"]["ok"] and data["firstTick"]["waitedMs"] <= 70_000, (
        json.dumps(data["firstTick"]) + " tick log: " + (log.read_text() if log.exists() else "(none)")
    )
    assert f"{project}: tick started (pid " in log.read_text()  # cron ran croft tick --all, which ticked it

    deadline = time.monotonic() + 90
    runs = _scheduled_runs(project)
    while time.monotonic() < deadline and not any(status == "succeeded" for _, status in runs):
        time.sleep(0.5)
        runs = _scheduled_runs(project)
    assert any(status == "succeeded" for _, status in runs), f"no scheduled run succeeded: {runs}; " + (
        log.read_text()
    )
    assert len(served) >= 2  # the scheduled run called the API itself
    wh = sqlite3.connect(project / "warehouse.sqlite")
    try:
        count, first_call = wh.execute("SELECT COUNT(*), MIN(call) FROM orders").fetchone()
    finally:
        wh.close()
    assert count == 2 and first_call >= 2  # the rows the scheduled run fetched replaced the first ones

    off = _croft(python, ["schedule", "off", "--json"], env, project)
    assert off.returncode == 0, off.stdout + off.stderr
    after = subprocess.run(["crontab", "-l"], capture_output=True, text=True, check=True).stdout
    assert after == table  # our line gone, every other line byte for byte
