"""The project tick and scheduled runs as real processes, with CROFT_NOW moving the clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from schedulekit import (
    ISSUES,
    SUMMARY,
    croft_json,
    env_at,
    lease,
    note,
    query,
    runs_of,
    schedule_on,
    setting,
    state_of,
    steps_of,
    tick,
    wait_for_runs,
)

pytestmark = pytest.mark.processes

T0 = "2026-06-01T10:05:00Z"  # London is UTC+1: the 11:00 fire was at 10:00Z


@pytest.fixture
def project(make_project):
    def make(files=None, schedule="every hour", approve=True, on=True):
        root = make_project(
            files
            if files is not None
            else {
                "assets/issues.py": ISSUES.format(schedule=schedule),
                "assets/summary.sql": SUMMARY.format(source="issues"),
            }
        )
        if approve:
            code, envelope = croft_json(root, "2026-06-01T09:30:00Z", "run")
            assert code == 0, envelope
        if on:
            schedule_on(root, "2026-06-01T09:30:00Z")
        return root

    return make


def test_off_and_paused_ticks_exit_at_once_with_no_heartbeat(project):
    root = project(on=False)
    assert tick(root, T0)["exited"] == "off"
    assert query(root, "SELECT * FROM tick") == []
    conn_env = env_at(T0)
    code = (
        "import sys; from datetime import datetime, UTC; from croft.history.db import open_history;"
        "from croft.scheduler.setting import write_scheduling;"
        "c = open_history(sys.argv[1]);"
        "write_scheduling(c, 'paused', datetime(2026,6,1,10,0,tzinfo=UTC), via='serve',"
        " paused_until=datetime(2026,6,1,12,0,tzinfo=UTC))"
    )
    subprocess.run([sys.executable, "-c", code, str(root / ".croft")], check=True, env=conn_env)
    paused = tick(root, T0)
    assert paused["exited"] == "paused" and paused["heartbeatAt"] is None and paused["spawned"] == []
    assert query(root, "SELECT heartbeat_at FROM tick") == []
    after = tick(root, "2026-06-01T12:00:00Z")  # the pause has ended: reads as on
    assert after["exited"] is None and after["heartbeatAt"] == "2026-06-01T12:00:00.000Z"
    assert query(root, "SELECT pid, heartbeat_at FROM tick") == [
        {"pid": None, "heartbeat_at": "2026-06-01T12:00:00.000Z"}
    ]


def test_a_real_tick_starts_one_scheduled_run_per_fire_with_what_reads_the_ingest(project):
    root = project()
    first = tick(root, T0)
    assert [s["assets"] for s in first["spawned"]] == [["issues"]]
    assert first["spawned"][0]["reason"] == "fired at 11:00"
    run_id = first["spawned"][0]["runId"]
    assert run_id.startswith("r_0601_1105_")
    run = next(r for r in runs_of(root) if r["id"] == run_id)
    assert run["trigger"] == "schedule" and run["human"] == 0 and run["status"] == "succeeded"
    steps = {s["asset"]: s["status"] for s in steps_of(root, run_id)}
    assert steps == {"issues": "unchanged"}  # summary was up to date: nothing it reads changed
    assert state_of(root, "issues")["last_fire_at"] == "2026-06-01T10:00:00.000Z"
    assert tick(root, "2026-06-01T10:30:00Z")["spawned"] == []  # handled once
    assert tick(root, "2026-06-01T10:59:00Z")["spawned"] == []
    again = tick(root, "2026-06-01T11:00:00Z")
    assert [s["assets"] for s in again["spawned"]] == [["issues"]]
    # The process log holds what the child printed; the tick's own stdout stayed one envelope.
    again_id = again["spawned"][0]["runId"]
    log = root / ".croft" / "logs" / again_id / "process.log"
    assert log.is_file() and json.loads(log.read_text())["data"]["runId"] == again_id
    # Once a tick has settled a run that reported itself, the copy it printed goes (its row keeps it)
    # and no file of it is left under .croft/logs: its step logs are rows of the history too.
    assert not (root / ".croft" / "logs" / run_id).exists()
    assert tick(root, "2026-06-01T11:01:00Z")["spawned"] == []
    assert not log.parent.exists() and list((root / ".croft" / "logs").iterdir()) == []
    [row] = query(root, "SELECT summary FROM runs WHERE id = ?", again_id)
    assert json.loads(row["summary"])["data"]["runId"] == again_id
    _, logs = croft_json(root, "2026-06-01T11:05:00Z", "logs", "--runs")
    scheduled = next(r for r in logs["data"]["runs"] if r["runId"] == run_id)
    assert scheduled["trigger"] == "schedule" and scheduled["scheduled"] is True


def test_a_clock_moved_backwards_never_runs_a_fire_a_second_time(project):
    root = project()
    assert tick(root, "2026-06-01T11:01:00Z")["spawned"]
    for earlier in ("2026-06-01T10:59:00Z", "2026-06-01T10:01:00Z", "2026-06-01T11:01:00Z"):
        assert tick(root, earlier)["spawned"] == [], earlier
    assert len([r for r in runs_of(root) if r["trigger"] == "schedule"]) == 1


def test_new_code_is_held_until_a_run_by_hand_releases_it(project):
    root = project(approve=False)
    held = tick(root, T0)
    assert held["spawned"] == []
    assert {h["asset"]: h["code"] for h in held["held"]} == {"issues": "SCHEDULE_HELD"}
    assert "new: code edited" in held["held"][0]["message"] and "croft run issues" in held["held"][0]["hint"]
    code, _ = croft_json(root, "2026-06-01T10:06:00Z", "run", "issues")
    assert code == 0
    # The run by hand covered the 11:00 fire; the next fire runs unattended.
    assert tick(root, "2026-06-01T10:10:00Z")["spawned"] == []
    nxt = tick(root, "2026-06-01T11:00:30Z")
    assert [s["assets"] for s in nxt["spawned"]] == [["issues"]] and nxt["held"] == []


def test_an_edit_made_after_the_tick_is_caught_when_the_step_starts(project):
    root = project()
    (root / "assets" / "issues.py").write_text(
        textwrap.dedent(ISSUES.format(schedule="every hour")) + "\n# edited\nX = 1\n"
    )
    # The scheduled run named by a tick: the hold is checked again when the run plans and starts the step.
    code, envelope = croft_json(root, T0, "run", "--due", "issues")
    assert code == 0 and envelope["data"]["status"] == "succeeded"
    step = envelope["data"]["steps"][0]
    assert step["status"] == "skipped" and step["reason"].startswith("held (SCHEDULE_HELD): code edited")
    run_id = envelope["data"]["runId"]
    assert [s for s in steps_of(root, run_id) if s["asset"] == "issues"] == []  # no attempt: stays due
    assert state_of(root, "issues").get("last_fire_at") is None


def test_a_leased_asset_is_skipped_and_stays_due(project):
    root = project()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        lease(root, "issues", "r_other", holder.pid)
        held = tick(root, T0)
        assert held["spawned"] == [] and held["held"][0]["code"] == "ASSET_BUSY"
        assert "run r_other holds it; it stays due" in held["held"][0]["message"]
        # A scheduled run that meets the lease skips the ingest at once, never waiting.
        code_, envelope = croft_json(root, T0, "run", "--due", "issues")
        assert (
            code_ == 0
            and envelope["data"]["steps"][0]["reason"] == "held: run r_other holds it; it stays due"
        )
    finally:
        holder.kill()
        holder.wait()
    freed = tick(root, "2026-06-01T10:06:00Z")
    assert [s["assets"] for s in freed["spawned"]] == [["issues"]]


def test_a_run_that_met_a_lease_after_the_tick_planned_gives_its_fire_back(project):
    root = project()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        # As a tick does: fire, attempt and note recorded; then the lease appears before the child runs.
        lease(root, "issues", "r_late", holder.pid)
        note(root, "r_0601_1105_late", ["issues"], T0, {"issues": "2026-06-01T10:00:00.000Z"})
        assert state_of(root, "issues")["last_fire_at"] == "2026-06-01T10:00:00.000Z"
        code_, envelope = croft_json(root, T0, "run", "--due", "--run-id", "r_0601_1105_late", "issues")
        assert code_ == 0 and envelope["data"]["runId"] == "r_0601_1105_late"
    finally:
        holder.kill()
        holder.wait()
    nxt = tick(root, "2026-06-01T10:06:00Z")
    # The run ended normally without attempting the ingest: the fire went back, with no wait.
    assert [s["assets"] for s in nxt["spawned"]] == [["issues"]]
    assert state_of(root, "issues")["last_fire_at"] == "2026-06-01T10:00:00.000Z"


def test_a_child_killed_before_it_recorded_its_run_leaves_the_fire_due_for_15_minutes(project):
    root = project()
    first = tick(root, T0, CROFT_FAULT="before_run")
    run_id = first["spawned"][0]["runId"]
    assert query(root, "SELECT id FROM runs WHERE id = ?", run_id) == []
    second = tick(root, "2026-06-01T10:06:00Z")
    assert second["spawned"] == []
    assert second["held"][0]["code"] == "SCHEDULE_BACKOFF"
    assert "its process ended before it recorded the run" in second["held"][0]["message"]
    assert state_of(root, "issues")["last_fire_at"] is None  # the fire went back: it stays due
    _, envelope = croft_json(root, "2026-06-01T10:07:00Z", "tick")
    assert envelope["data"]["spawned"] == []
    warnings = [p for p in envelope["problems"] if p["code"] == "RUN_CRASHED"]
    assert warnings == []  # reported once, by the tick that found it
    retry = tick(root, "2026-06-01T10:20:00Z")
    assert [s["assets"] for s in retry["spawned"]] == [["issues"]]
    assert state_of(root, "issues")["last_fire_at"] == "2026-06-01T10:00:00.000Z"


def test_the_tick_that_finds_a_failed_start_reports_it_once(project):
    root = project()
    tick(root, T0, CROFT_FAULT="before_run")
    _, envelope = croft_json(root, "2026-06-01T10:06:00Z", "tick")
    (warning,) = [p for p in envelope["problems"] if p["code"] == "RUN_CRASHED"]
    assert warning["severity"] == "warning" and "did not start issues" in warning["message"]
    assert "it runs again after 11:20" in warning["hint"]


def test_two_concurrent_ticks_start_one_run(project):
    root = project()
    env = env_at(T0)
    ticks = [
        subprocess.Popen(
            [sys.executable, "-m", "croft", "tick", "--json"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outs = [json.loads(t.communicate(timeout=120)[0])["data"] for t in ticks]
    wait_for_runs(root)
    assert sum(len(o["spawned"]) for o in outs) == 1
    assert all(o["exited"] in (None, "busy") for o in outs)
    assert len([r for r in runs_of(root) if r["trigger"] == "schedule"]) == 1


def test_independent_pipelines_run_apart_and_ingests_feeding_one_transform_together(project):
    files = {
        "assets/a.py": ISSUES.format(schedule="every hour"),
        "assets/b.py": ISSUES.format(schedule="every hour"),
        "assets/c.py": ISSUES.format(schedule="every hour"),
        "assets/ab.sql": "-- key: id\nSELECT a.id, a.n + b.n AS s FROM a JOIN b ON a.id = b.id\n",
        "assets/c_only.sql": SUMMARY.format(source="c"),
    }
    root = project(files)
    out = tick(root, T0)
    assert sorted(s["assets"] for s in out["spawned"]) == [["a", "b"], ["c"]]
    for spawned in out["spawned"]:
        run = next(r for r in runs_of(root) if r["id"] == spawned["runId"])
        assert run["status"] == "succeeded"


FROM_FILE = """
import json
from pathlib import Path

from croft import ingest


@ingest(schedule="daily at 06:00", key="id")
def rows(ctx):
    yield json.loads((Path(__file__).parent.parent / "data.json").read_text())
"""


def test_a_deterministic_transform_failure_waits_for_its_input_to_change(project, make_project):
    files = {
        "assets/issues.py": FROM_FILE,
        "assets/summary.sql": "-- key: id\n-- check: m < 100\nSELECT id, n * 10 AS m FROM issues\n",
        "data.json": '[{"id": 1, "n": 1}]',
    }
    root = project(files)
    # New data makes the (approved) transform fail its check: deterministic, so not retried on a timer.
    (root / "data.json").write_text('[{"id": 1, "n": 50}]')
    assert croft_json(root, "2026-06-01T09:40:00Z", "run", "issues", "--only")[0] == 0
    failing = tick(root, T0)
    assert [s["assets"] for s in failing["spawned"]] == [["summary"]]
    step = steps_of(root, failing["spawned"][0]["runId"])
    assert [(s["asset"], s["status"]) for s in step] == [("summary", "failed")]
    held = tick(root, "2026-06-01T10:06:00Z")
    assert held["spawned"] == [] and held["held"][0]["code"] == "SCHEDULE_BACKOFF"
    assert "waits for a change to its code or inputs" in held["held"][0]["message"]
    assert tick(root, "2026-06-01T13:00:00Z")["spawned"] == []  # not every minute, not after 15 min
    (root / "data.json").write_text('[{"id": 1, "n": 3}]')
    assert croft_json(root, "2026-06-01T13:01:00Z", "run", "issues", "--only")[0] == 0
    again = tick(root, "2026-06-01T13:02:00Z")
    assert [s["assets"] for s in again["spawned"]] == [["summary"]]
    assert [s["status"] for s in steps_of(root, again["spawned"][0]["runId"])] == ["ok"]


def test_the_tick_parses_and_reads_no_asset_file_when_nothing_changed(project):
    root = project()
    tick(root, T0)
    probe = textwrap.dedent(
        """
        import ast, sys
        opened = []
        parsed = []
        sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
        real_parse = ast.parse
        ast.parse = lambda *a, **k: (parsed.append(1), real_parse(*a, **k))[1]
        sys.argv = ["croft", "tick", "--json"]
        from croft.cli.main import main
        try:
            main()
        except SystemExit:
            pass
        assets = [p for p in opened if "/assets/" in p]
        print("PROBE", assets, len(parsed), file=sys.stderr)
        """
    )

    def run_probe(now: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", probe], cwd=root, env=env_at(now), capture_output=True, text=True
        )
        return out.stderr

    first = run_probe("2026-06-01T10:30:00Z")  # a full tick: it settles the run the tick above started
    assert next(x for x in first.splitlines() if x.startswith("PROBE")) == "PROBE [] 0", first
    # An edit is read once, then not again.
    (root / "assets" / "issues.py").write_text(textwrap.dedent(ISSUES.format(schedule="every 2 hours")))
    edited = run_probe("2026-06-01T10:31:00Z")
    assert "issues.py" in next(x for x in edited.splitlines() if x.startswith("PROBE")), edited
    second = run_probe("2026-06-01T10:32:00Z")
    assert next(x for x in second.splitlines() if x.startswith("PROBE")) == "PROBE [] 0"


def test_the_child_gets_an_explicit_environment_without_shell_secrets(project, tmp_path):
    from croft.core.children import croft_env

    env = croft_env({"PATH": "/bin", "API_KEY": "s3cret", "CROFT_NOW": "x"})
    assert "/bin" in env["PATH"].split(":") and env["CROFT_NOW"] == "x"
    assert "API_KEY" not in env


def test_a_dead_tick_holder_is_taken_over(project):
    root = project()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    code = (
        "import sys; from croft.history.db import open_history; from croft.history.state import claim_tick;"
        "from croft.core.identity import ProcessIdentity;"
        "c = open_history(sys.argv[1]); claim_tick(c, ProcessIdentity(int(sys.argv[2]), '1', None))"
    )
    subprocess.run([sys.executable, "-c", code, str(root / ".croft"), str(dead.pid)], check=True)
    assert tick(root, T0)["exited"] is None


def test_a_child_that_refuses_to_start_leaves_its_reason(project):
    root = project()
    assert tick(root, T0)["spawned"]
    # A refusal left by a child is read by the next tick and becomes the failed start's reason.
    refusal = root / ".croft" / "logs" / "r_refused" / "_not_started.json"
    refusal.parent.mkdir(parents=True)
    refusal.write_text(json.dumps({"code": "CONFIG_INVALID", "message": "croft.json is broken"}))
    note(root, "r_refused", ["issues"], "2026-06-01T11:00:00Z", {"issues": "2026-06-01T11:00:00.000Z"})
    _, envelope = croft_json(root, "2026-06-01T11:01:00Z", "tick")
    (warning,) = [p for p in envelope["problems"] if p["code"] == "RUN_CRASHED"]
    assert "it refused to start: CONFIG_INVALID: croft.json is broken" in warning["message"]
    assert envelope["data"]["spawned"] == [] and state_of(root, "issues")["last_fire_at"] == (
        "2026-06-01T10:00:00.000Z"
    )


SLOW = """
import os
import time

from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    waited = 0.0
    while os.path.exists("hold") and waited < 60:  # a scheduled run starts in the project folder
        time.sleep(0.05)
        waited += 0.05
    yield {"id": 1}
"""


def test_the_child_runs_detached_in_its_own_session_after_the_tick_has_exited(project):
    root = project({"assets/issues.py": SLOW})
    (root / "hold").touch()  # the run stays alive until the test has looked at it
    out = tick(root, T0, wait=False)
    run_id = out["spawned"][0]["runId"]
    note = next(n for n in setting(root, "schedule.spawned") if n["runId"] == run_id)
    assert os.getsid(note["pid"]) == note["pid"] != os.getsid(0)
    (root / "hold").unlink()
    wait_for_runs(root)
    assert query(root, "SELECT status FROM runs WHERE id = ?", run_id) == [{"status": "succeeded"}]


def test_an_idle_tick_only_beats_while_nothing_it_read_has_changed(project):
    root = project(
        {
            "assets/issues.py": "from lib.fetch import ROWS\n" + ISSUES.format(schedule="every hour"),
            "assets/summary.sql": SUMMARY.format(source="issues"),
            "lib/__init__.py": "",
            "lib/fetch.py": "ROWS = 2\n",
        }
    )
    assert tick(root, "2026-06-01T10:05:00Z")["spawned"]  # the 11:00 fire runs
    full = tick(root, "2026-06-01T10:06:00Z")  # nothing to do: leaves the memo
    assert full["path"] == "full" and full["spawned"] == [] and full["held"] == []
    idle = tick(root, "2026-06-01T10:07:00Z")
    assert idle["path"] == "idle" and idle["heartbeatAt"] == "2026-06-01T10:07:00.000Z"
    assert query(root, "SELECT heartbeat_at, pid FROM tick") == [
        {"heartbeat_at": "2026-06-01T10:07:00.000Z", "pid": None}
    ]
    # A module an asset imports changes: the full tick decides again (nothing is due yet), then idles.
    (root / "lib" / "fetch.py").write_text("ROWS = 3\n")
    assert tick(root, "2026-06-01T10:08:00Z")["path"] == "full"
    assert tick(root, "2026-06-01T10:09:00Z")["path"] == "idle"
    assert croft_json(root, "2026-06-01T10:10:00Z", "run", "summary")[0] == 0
    assert tick(root, "2026-06-01T10:11:00Z")["path"] == "full"  # the history changed
    assert tick(root, "2026-06-01T10:12:00Z")["path"] == "idle"
    # A new asset file (new code: due and held, so no memo), the clock going back, and the next fire.
    (root / "assets" / "extra.sql").write_text(SUMMARY.format(source="issues"))
    new = tick(root, "2026-06-01T10:13:00Z")
    assert new["path"] == "full" and [h["asset"] for h in new["held"]] == ["extra"]
    assert tick(root, "2026-06-01T10:13:30Z")["path"] == "full"
    (root / "assets" / "extra.sql").unlink()
    assert tick(root, "2026-06-01T10:14:00Z")["path"] == "full"
    assert tick(root, "2026-06-01T10:15:00Z")["path"] == "idle"
    assert tick(root, "2026-06-01T10:13:45Z")["path"] == "full"  # earlier than the memo was made
    assert tick(root, "2026-06-01T10:16:00Z")["path"] == "idle"
    fired = tick(root, "2026-06-01T11:00:00Z")  # the edit to lib/ is caught at the fire
    assert fired["path"] == "full" and fired["spawned"] == [] and fired["held"][0]["code"] == "SCHEDULE_HELD"
    code, _ = croft_json(root, "2026-06-01T11:03:00Z", "schedule", "off")
    off = tick(root, "2026-06-01T11:04:00Z")
    assert code == 0 and off["exited"] == "off"
