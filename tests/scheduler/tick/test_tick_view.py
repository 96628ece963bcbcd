"""The read-only scheduler view (status), the facts cache, settling, and the small commands around the tick."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

from enginekit import croft, history
from schedulekit import ISSUES, SUMMARY

from croft.core.clock import parse_instant
from croft.core.identity import ProcessIdentity
from croft.core.problems import Problem
from croft.history import runs
from croft.history.db import open_history
from croft.project.config import load_project
from croft.scheduler.tick.factcache import load_facts
from croft.scheduler.tick.gather import landed_writes, latest_steps
from croft.scheduler.tick.settle import apply_settled, note_spawn, settle
from croft.scheduler.tick.view import schedule_view

NOW = datetime(2026, 6, 1, 10, 5, tzinfo=UTC)


def _project(make_project):
    return make_project(
        {
            "assets/issues.py": ISSUES.format(schedule="every hour"),
            "assets/summary.sql": SUMMARY.format(source="issues"),
        }
    )


def test_the_view_without_runs_sqlite_reads_every_asset_as_new_and_creates_nothing(make_project):
    root = _project(make_project)
    view = schedule_view(load_project(root), NOW)
    assert not (root / ".croft").exists()
    issues = view["assets"]["issues"]
    assert issues["due"] and issues["hold"]["code"] == "SCHEDULE_HELD"
    assert issues["hold"]["reason"].startswith("new: ")
    assert issues["nextFireAt"] is None and issues["next"] == "scheduling off"  # off: no fire comes
    assert view["assets"]["summary"]["next"] == "after inputs"
    assert view["scheduling"]["effective"] == "off" and view["scheduling"]["heartbeatAt"] is None


def test_status_shows_schedule_next_fire_missed_fires_and_holds(make_project, monkeypatch):
    root = _project(make_project)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T09:30:00Z")
    assert croft(root, "run")[0] == 0
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T13:10:00Z")
    code, status = croft(root, "status")
    assert code == 0
    block = next(a for a in status["data"]["assets"] if a["asset"] == "issues")["schedule"]
    assert block["due"] and block["missedFires"] == 4 and block["hold"] is None
    assert block["dueReason"] == "fired at 14:00; 4 missed fires run once"
    assert block["schedule"] == "every hour" and block["cron"] == "0 * * * *"
    assert block["next"] == "scheduling off"


def test_the_facts_cache_reads_a_file_only_when_its_stat_key_moves(make_project):
    root = _project(make_project)
    project = load_project(root)
    conn = open_history(project.config.state_dir)
    try:
        infos, read = load_facts(conn, project)
        assert sorted(read) == ["issues", "summary"] and infos["summary"].inputs == ("issues",)
        assert infos["issues"].cron == "0 * * * *" and infos["issues"].spec is not None
        assert load_facts(conn, project)[1] == []
        (root / "assets" / "issues.py").write_text(ISSUES.format(schedule="every 2 hours"))
        infos, read = load_facts(conn, project)
        assert read == ["issues"] and infos["issues"].cron == "0 */2 * * *"
        (root / "assets" / "issues.py").write_text("from croft import ingest\n\n@ingest(schedule=\n")
        infos, read = load_facts(conn, project)
        # A file that no longer loads keeps its schedule: it stays scheduled, and held.
        assert read == ["issues"] and not infos["issues"].loads and infos["issues"].cron == "0 */2 * * *"
    finally:
        conn.close()


def test_a_zone_change_is_said_as_such(make_project, monkeypatch):
    root = _project(make_project)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T09:30:00Z")
    assert croft(root, "run")[0] == 0
    project = load_project(root)
    conn = open_history(project.config.state_dir)
    load_facts(conn, project)
    conn.close()
    (root / "croft.json").write_text(json.dumps({"timezone": "America/New_York"}))
    view = schedule_view(load_project(root), parse_instant("2026-06-01T10:05:00Z"))
    hold = view["assets"]["issues"]["hold"]
    assert hold["code"] == "SCHEDULE_HELD"
    assert hold["reason"].startswith("the project time zone changed (Europe/London → America/New_York)")


def test_a_crash_after_the_warehouse_commit_counts_the_write(make_project):
    root = _project(make_project)
    conn = open_history(root / ".croft")
    try:
        who = ProcessIdentity(1, None, None)
        runs.create_run(conn, run_id="r_x", trigger="schedule", human=False, argv=[], who=who)
        runs.start_step(
            conn, run_id="r_x", asset="summary", attempt=1, reason="stale", code_hash=None, log_path=None
        )
        runs.mark_crashed(conn, "r_x", Problem("RUN_CRASHED", "x", "y"))
        wh = sqlite3.connect(root / "warehouse.sqlite")
        wh.execute("CREATE TABLE _croft_writes (asset TEXT, loaded_at TEXT, run_id TEXT, attempt INTEGER)")
        wh.execute("INSERT INTO _croft_writes VALUES ('summary', 'now', 'r_x', 1)")
        wh.commit()
        wh.close()
        landed = landed_writes(root / "warehouse.sqlite", latest_steps(conn, ["summary"]))
        assert list(landed) == ["summary"]
    finally:
        conn.close()


def test_settling_gives_a_fire_back_only_while_no_later_fire_moved_it(make_project):
    root = _project(make_project)
    conn = open_history(root / ".croft")
    try:
        note_spawn(conn, "r_gone", ["issues"], NOW, {"issues": "2026-06-01T10:00:00.000Z"}, ["issues"])
        conn.execute("UPDATE schedule_state SET last_fire_at = '2026-06-01T11:00:00.000Z'")
        later = parse_instant("2026-06-01T10:30:00Z")
        settled = settle(conn, root / ".croft", later)
        assert [f.reason for f in settled.new_failures] == ["its process ended before it recorded the run"]
        apply_settled(conn, settled)
        row = conn.execute("SELECT last_fire_at FROM schedule_state WHERE asset = 'issues'").fetchone()
        assert row[0] == "2026-06-01T11:00:00.000Z"
    finally:
        conn.close()


def test_schedule_on_no_os_job_and_off_flip_the_one_setting(make_project):
    from croft.scheduler.setting import read_scheduling_file

    root = _project(make_project)
    assert croft(root, "schedule", "on", "--no-os-job")[0] == 0
    setting = read_scheduling_file(root / ".croft")
    assert (setting.state, setting.via) == ("on", "serve")
    assert croft(root, "schedule", "off")[0] == 0
    assert read_scheduling_file(root / ".croft").state == "off"


def test_run_due_refuses_only_and_a_run_id_without_due(make_project):
    root = _project(make_project)
    code, envelope = croft(root, "run", "--due", "--only", "issues")
    assert code == 2 and "does not go with --only" in envelope["problems"][0]["message"]
    code, envelope = croft(root, "run", "--run-id", "r_1", "issues")
    assert code == 2 and envelope["problems"][0]["code"] == "USAGE"


def test_run_due_names_what_is_no_asset_and_records_no_empty_run(make_project):
    """`run --due nosuch` once answered ok and recorded an empty "succeeded" run. By hand, a name that is no
    asset is UNKNOWN_ASSET (as for `croft run`); started by the tick (a run id), a file removed since is
    left out, and nothing left to run is UNKNOWN_ASSET too. No run is recorded for a refusal."""
    root = _project(make_project)
    code, envelope = croft(root, "run", "--due", "isues")
    [bad] = envelope["problems"]
    assert code == 2 and bad["code"] == "UNKNOWN_ASSET" and bad["suggestion"] == "issues"
    assert bad["fix"]["command"] == "croft run --due issues"
    code, envelope = croft(root, "run", "--due", "--run-id", "r_0601_1100_gone", "gone")
    assert code == 2 and envelope["problems"][0]["code"] == "UNKNOWN_ASSET"
    code, envelope = croft(root, "run", "--due")
    assert code == 2 and envelope["problems"][0]["code"] == "USAGE"
    assert history(root, "SELECT id FROM runs") == []
    code, envelope = croft(root, "run", "--due", "--run-id", "r_0601_1100_kept", "issues", "gone")
    ran = [s["asset"] for s in envelope["data"]["steps"]]
    assert code == 0 and ran[0] == "issues" and "gone" not in ran


def test_a_scheduled_run_holds_everything_while_scheduling_is_paused_or_off(make_project, monkeypatch):
    from croft.scheduler.setting import write_scheduling

    root = _project(make_project)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T09:30:00Z")
    assert croft(root, "run")[0] == 0
    code, off = croft(root, "run", "--due", "issues")
    assert code == 0 and off["data"]["steps"][0]["reason"] == "held: scheduling is off"
    conn = open_history(root / ".croft")
    write_scheduling(conn, "paused", NOW, via="serve", paused_until=datetime(2026, 6, 1, 12, tzinfo=UTC))
    conn.close()
    code, paused = croft(root, "run", "--due", "issues")
    assert code == 0 and paused["data"]["steps"][0]["reason"] == "held: scheduling is paused"
    assert paused["data"]["status"] == "succeeded"
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T12:00:00Z")  # the pause is over: it runs
    code, ran = croft(root, "run", "--due", "issues")
    assert code == 0 and ran["data"]["steps"][0]["status"] in ("ok", "unchanged")
    conn = open_history(root / ".croft")
    try:
        state = conn.execute(
            "SELECT last_fire_at, last_attempt_at FROM schedule_state WHERE asset = 'issues'"
        ).fetchone()
    finally:
        conn.close()
    # The fire it handled (13:00 London, exactly now) and its attempt, recorded when the step started.
    assert tuple(state) == ("2026-06-01T12:00:00.000Z", "2026-06-01T12:00:00.000Z")


def test_status_warns_of_each_held_due_asset_while_scheduling_is_on(make_project, monkeypatch):
    root = _project(make_project)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:05:00Z")
    _, quiet = croft(root, "status")
    assert quiet["problems"] == []  # scheduling off: nothing will be started, so nothing is held back
    assert croft(root, "schedule", "on", "--no-os-job")[0] == 0
    code, status = croft(root, "status")
    (warning,) = [p for p in status["problems"] if p["asset"] == "issues"]
    assert code == 0 and status["ok"] and warning["code"] == "SCHEDULE_HELD"
    assert warning["severity"] == "warning" and "croft run issues" in warning["hint"]


def test_a_run_that_cannot_be_started_is_a_problem_and_its_fire_stays_due(make_project, monkeypatch):
    from croft.scheduler.setting import write_scheduling
    from croft.scheduler.tick import project_tick as tick
    from croft.scheduler.tick import start as startrun

    root = _project(make_project)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T09:30:00Z")
    assert croft(root, "run")[0] == 0
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", NOW, via="serve")
    conn.close()

    def no_fork(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(startrun, "start_due_run", no_fork)
    data, problems = tick.project_tick(load_project(root), NOW)
    assert data["spawned"] == [] and problems[0].code == "INTERNAL_ERROR"
    assert "could not start the run of issues: Resource temporarily unavailable" in problems[0].message
    assert "tries again after 11:20" in problems[0].hint
    conn = open_history(root / ".croft")
    try:
        fire = conn.execute("SELECT last_fire_at FROM schedule_state WHERE asset = 'issues'").fetchone()[0]
    finally:
        conn.close()
    assert fire is None  # given back: it stays due
    later, _ = tick.project_tick(load_project(root), parse_instant("2026-06-01T10:10:00Z"))
    assert later["spawned"] == [] and later["held"][0]["code"] == "SCHEDULE_BACKOFF"


def test_asset_rows_give_the_schedule_commands_the_ticks_decision(make_project):
    from croft.scheduler.tick.view import asset_rows

    root = _project(make_project)
    rows = {r["asset"]: r for r in asset_rows(schedule_view(load_project(root), NOW))}
    assert rows["issues"]["due"] and rows["issues"]["cron"] == "0 * * * *"
    assert (
        rows["issues"]["held"]["code"] == "SCHEDULE_HELD"
        and rows["issues"]["held"]["release"] == "croft run issues"
    )
    assert set(rows["summary"]) == set(rows["issues"]) and rows["summary"]["schedule"] is None
