"""``scripts/demo`` end to end, as the README's quick start runs it: it must reach a scheduled run, hold an
edited asset until a run by hand releases it, and record the notification of a scheduled failure, all in
its own throwaway folder (the caller's CROFT_HOME, and so the caller's OS job, stay untouched)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "scripts" / "demo"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="scripts/demo is a bash script")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """Run the demo once for every test here: (its working folder, its output, the caller's CROFT_HOME)."""
    work = tmp_path_factory.mktemp("demo") / "work"
    caller_home = tmp_path_factory.mktemp("caller-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROFT_")}
    # The caller's own croft world, which the demo must leave alone; and the venv these tests run in.
    env |= {
        "CROFT_HOME": str(caller_home),
        "CROFT_JOB_LABEL": "dev.croft.test-demo",
        "CROFT_VENV": sys.prefix,
    }
    proc = subprocess.run(
        [str(DEMO), str(work)], env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return work, proc.stdout, caller_home


def _runs(work: Path) -> list[dict]:
    conn = sqlite3.connect(work / "shop" / ".croft" / "runs.sqlite")
    conn.row_factory = sqlite3.Row
    try:
        return [
            dict(r) for r in conn.execute("SELECT id, trigger, status, started_at FROM runs ORDER BY rowid")
        ]
    finally:
        conn.close()


def test_the_demo_reaches_a_scheduled_run(demo):
    work, out, _ = demo
    scheduled = [r for r in _runs(work) if r["trigger"] == "schedule"]
    assert scheduled[0]["status"] == "succeeded"
    assert scheduled[0]["started_at"] == "2026-01-20T09:15:00.000Z"
    assert f"tick: started {scheduled[0]['id']} (orders)" in out
    assert f"the scheduled run {scheduled[0]['id']} ended: succeeded" in out


def test_the_edit_is_held_then_released_by_a_run_by_hand(demo):
    work, out, _ = demo
    held = out.index("held orders (SCHEDULE_HELD)")
    by_hand = out.index("$ croft run orders", held)
    assert "2026-01-20 09:30" in out[out.rindex("[the clock reads", 0, held) : held]
    runs = {r["started_at"][11:16]: r for r in _runs(work)}
    assert runs["09:30"]["trigger"] == "manual" and runs["09:30"]["status"] == "succeeded"
    assert runs["09:45"]["trigger"] == "schedule" and runs["09:45"]["status"] == "succeeded"
    assert out.index(f"tick: started {runs['09:45']['id']} (orders)") > by_hand


def test_a_scheduled_failure_is_notified(demo):
    work, out, _ = demo
    failed = [r for r in _runs(work) if r["status"] == "failed"]
    assert [(r["trigger"], r["started_at"]) for r in failed] == [("schedule", "2026-01-20T10:00:00.000Z")]
    lines = (work / "shop" / ".croft" / "logs" / "notifications.ndjson").read_text().splitlines()
    (note,) = [json.loads(line) for line in lines]
    assert (note["kind"], note["event"], note["runId"]) == ("desktop", "failed", failed[0]["id"])
    assert note["body"].startswith("orders failed in a scheduled run: HTTP_ERROR")
    assert f"[{note['title']}] {note['body']}" in out


def test_the_story_ends_with_the_schedule_status_and_touches_nothing_of_the_caller(demo):
    work, out, caller_home = demo
    assert out.rindex("$ croft schedule status") > out.rindex("croft logs orders --failed")
    assert "Scheduling is on for" in out[out.rindex("$ croft schedule status") :]
    assert list(caller_home.iterdir()) == []
    (entry,) = json.loads((work / "croft-home" / "projects.json").read_text())
    assert entry["via"] == "serve" and entry["root"] == str((work / "shop").resolve())


def test_the_demo_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    env = {**os.environ, "CROFT_VENV": sys.prefix}
    proc = subprocess.run([str(DEMO), str(tmp_path)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "is not empty" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
