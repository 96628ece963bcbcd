"""End to end against a real cron daemon: schedule on writes the line, cron runs `croft tick --all`
within the minute, the per-user tick starts the project's tick, and schedule off removes the line while
an unrelated line stays byte for byte. Paths contain spaces (and a %, which cron would otherwise eat).

Needs root (cron daemons run as root) and the `cron` program; `scripts/test` installs it when it can.
The test starts `cron -f` itself when no cron daemon runs, and stops only what it started. Its crontab
lines are its own; whatever root's crontab held before is put back exactly.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from croft.schedule.heartbeat import cron_daemon_running

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
UNRELATED = "# croft e2e: an unrelated line  with  two spaces and 100% kept\n"
INGEST = """\
from croft import ingest

@ingest(schedule="every minute", key="id")
def rows(ctx):
    yield {"id": 1}
"""


def _why_not() -> str | None:
    if os.environ.get("CI") == "true":
        return None  # in CI this must run; a missing piece fails below instead of skipping
    if os.geteuid() != 0:
        return "a cron daemon can only be started by root, and this test runs as another user"
    if shutil.which("cron") is None or shutil.which("crontab") is None:
        return "cron is not installed (scripts/test installs it when run as root with apt-get)"
    return None


def _tick_exists() -> bool:
    """The project tick (`croft tick`) lands in another branch; until then only the per-user part is checked."""
    import importlib.util

    return importlib.util.find_spec("croft.schedule.tick") is not None


@pytest.fixture
def cron_daemon() -> Iterator[None]:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
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


def _croft(python: Path, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "croft", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=200
    )


def test_real_cron_ticks_the_project_and_off_keeps_the_other_lines(cron_daemon: None, tmp_path: Path) -> None:
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
    (project / "assets" / "orders.py").write_text(INGEST)
    label = f"dev.croft.e2e{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROFT_")}
    env |= {"CROFT_HOME": str(home), "CROFT_JOB_LABEL": label, "CROFT_NOTIFY_DRY": "1"}
    tick = _tick_exists()
    if tick:
        assert _croft(python, ["run", "orders"], env, project).returncode == 0  # a person ran it: not held
    # an unrelated line of the test's own, already in the table
    current = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    table = (current.stdout if current.returncode == 0 else "") + UNRELATED
    subprocess.run(["crontab", "-"], input=table, text=True, check=True)

    env_on = env | {"CROFT_HEARTBEAT_WAIT_MS": "70000" if tick else "1000"}
    started = time.monotonic()
    on = _croft(python, ["schedule", "on", "--backend", "crontab", "--json"], env_on, project)
    assert on.returncode == 0, on.stdout + on.stderr
    data = json.loads(on.stdout)["data"]
    assert data["job"]["backend"] == "crontab" and data["job"]["python"] == str(python)
    written = subprocess.run(["crontab", "-l"], capture_output=True, text=True, check=True).stdout
    assert written.startswith(table) and f"# croft:{label}" in written
    assert "\\%" in written  # the % in CROFT_HOME is escaped for cron

    log = home / "logs" / "tick.log"
    marker = f"{project}: tick started (pid "
    deadline = started + 75
    while time.monotonic() < deadline and not (log.exists() and marker in log.read_text()):
        time.sleep(0.5)
    assert log.exists() and marker in log.read_text(), (
        "cron did not run croft tick --all within the minute; tick log: "
        + (log.read_text() if log.exists() else "(none)")
    )
    if tick:
        assert data["firstTick"]["ok"], on.stdout
        deadline = time.monotonic() + 75
        runs: list[tuple[str, str]] = []
        while time.monotonic() < deadline:
            with sqlite3.connect(project / ".croft" / "runs.sqlite") as conn:
                runs = conn.execute("SELECT trigger, status FROM runs WHERE trigger = 'schedule'").fetchall()
            if any(status not in ("running", "starting") for _, status in runs):
                break
            time.sleep(1)
        assert runs, "no scheduled run of the due ingest"

    off = _croft(python, ["schedule", "off", "--json"], env, project)
    assert off.returncode == 0, off.stdout + off.stderr
    after = subprocess.run(["crontab", "-l"], capture_output=True, text=True, check=True).stdout
    assert after == table  # our line gone, every other line byte for byte
