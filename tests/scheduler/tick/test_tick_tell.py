"""What the tick tells, with real ``croft tick`` processes on a moved clock: the dead-man's-switch ping
after every completed tick (the idle one too, never after an early exit), and crashed scheduled runs
told once, whichever command found them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from schedulekit import ISSUES, SUMMARY, croft_json, note, schedule_on, setting, tick

pytestmark = pytest.mark.processes

SECRET = "sk_live_abcdef123456"
T0 = "2026-06-01T10:05:00Z"  # London is UTC+1: the 11:00 fire was at 10:00Z


@pytest.fixture
def project(make_project):
    def make(root: Path | None = None, **notify):
        folder = make_project(
            {
                "assets/issues.py": ISSUES.format(schedule="every hour"),
                "assets/summary.sql": SUMMARY.format(source="issues"),
                ".env": f"SHOP_KEY={SECRET}\n",
            },
            root=root,
            notify=notify,
        )
        code, envelope = croft_json(folder, "2026-06-01T09:30:00Z", "run")
        assert code == 0, envelope
        schedule_on(folder, "2026-06-01T09:30:00Z")
        return folder

    return make


def desktop(root: Path) -> list[dict]:
    path = root / ".croft/logs/notifications.ndjson"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["kind"] == "desktop"]


def notify_log(root: Path) -> list[str]:
    path = root / ".croft/logs/notify.log"
    return path.read_text().splitlines() if path.exists() else []


def test_every_completed_tick_pings_the_idle_one_too_and_an_early_exit_does_not(project, server):
    server.route("GET", "/ping", server.reply(200, "OK"))
    root = project(ping=server.url("/ping"))
    assert tick(root, T0)["spawned"]  # a full tick that starts the 11:00 fire
    assert len(server.requests_to("/ping")) == 1
    full = tick(root, "2026-06-01T10:06:00Z")  # nothing to do: leaves the idle memo
    assert full["path"] == "full" and len(server.requests_to("/ping")) == 2
    idle = tick(root, "2026-06-01T10:07:00Z")
    assert idle["path"] == "idle" and idle["heartbeatAt"] == "2026-06-01T10:07:00.000Z"
    assert [r.method for r in server.requests_to("/ping")] == ["GET", "GET", "GET"]

    assert croft_json(root, "2026-06-01T10:08:00Z", "schedule", "pause", "--for", "1h")[0] == 0
    assert tick(root, "2026-06-01T10:09:00Z")["exited"] == "paused"
    assert croft_json(root, "2026-06-01T10:10:00Z", "schedule", "off")[0] == 0
    assert tick(root, "2026-06-01T10:11:00Z")["exited"] == "off"
    assert len(server.requests_to("/ping")) == 3  # no ping for a tick that did not run
    assert notify_log(root) == []


def test_a_project_without_a_ping_sends_nothing_from_its_idle_tick(project, server):
    root = project()
    tick(root, T0)
    tick(root, "2026-06-01T10:06:00Z")
    idle = tick(root, "2026-06-01T10:07:00Z")
    assert idle["path"] == "idle"
    assert server.requests == [] and notify_log(root) == []


def test_a_failing_ping_is_one_line_per_tick_by_host_and_the_tick_goes_on(project, server, tmp_path):
    import threading

    release = threading.Event()
    server.route("GET", "/slow", lambda *_: (release.wait(10), (200, {}, ""))[1])
    root = project(ping=server.url(f"/gone?key={SECRET}"))
    try:
        assert tick(root, T0)["spawned"]
        tick(root, "2026-06-01T10:06:00Z")
        assert tick(root, "2026-06-01T10:07:00Z")["path"] == "idle"  # the idle tick logs its miss too
        slow = project(root=tmp_path / "slow", ping=server.url("/slow"))
        assert tick(slow, T0, CROFT_NOTIFY_TIMEOUT_MS="200")["spawned"]
        tick(slow, "2026-06-01T10:06:00Z", CROFT_NOTIFY_TIMEOUT_MS="200")
        assert tick(slow, "2026-06-01T10:07:00Z", CROFT_NOTIFY_TIMEOUT_MS="200")["path"] == "idle"
    finally:
        release.set()
    host = f"127.0.0.1:{server.port}"
    lines = notify_log(root)
    assert len(lines) == 3 and all(line.endswith(f"- ping {host}: HTTP 404") for line in lines)
    assert SECRET not in "\n".join(lines)
    assert [line.split(" - ", 1)[1] for line in notify_log(slow)] == [
        f"ping {host}: no answer within 0.2 s"
    ] * 3


def _crashed_scheduled_run(root: Path, run_id: str, asset: str, at: str, monkeypatch) -> None:
    """A scheduled run recorded as running whose process is gone (as a SIGKILL or a power cut leaves it)."""
    from croft.core.identity import ProcessIdentity
    from croft.history import runs
    from croft.history.db import open_history

    monkeypatch.setenv("CROFT_NOW", at)
    conn = open_history(root / ".croft")
    try:
        dead = ProcessIdentity(pid=999_999, start="0", boot="gone")
        runs.create_run(conn, run_id=run_id, trigger="schedule", human=False, argv=[], who=dead)
        runs.start_step(
            conn, run_id=run_id, asset=asset, attempt=1, reason="due", code_hash=None, log_path=None
        )
    finally:
        conn.close()


def failures(root: Path) -> list[str]:
    return [n["runId"] for n in desktop(root) if n["event"] == "failed"]


def test_a_crash_is_told_once_whether_the_tick_or_another_command_found_it(project, monkeypatch):
    root = project()
    assert tick(root, T0)["spawned"]  # the 11:00 fire ran: nothing more is due until 12:00
    _crashed_scheduled_run(root, "r_0601_1110_aaaa", "issues", "2026-06-01T10:10:00Z", monkeypatch)
    # `croft status` reconciles first (and notifies nothing): the next tick tells it.
    _, status = croft_json(root, "2026-06-01T10:11:00Z", "status")
    assert (
        all(p["code"] == "SCHEDULER_STALE" for p in status["problems"] if p["severity"] == "error")
        and desktop(root) == []
    )  # stale here: exit 1, nothing else
    tick(root, "2026-06-01T10:12:00Z")
    [note] = desktop(root)
    assert (
        note["runId"] == "r_0601_1110_aaaa"
        and "issues failed in a scheduled run: RUN_CRASHED" in note["body"]
    )
    for later in ("2026-06-01T10:13:00Z", "2026-06-01T10:20:00Z"):
        tick(root, later)
    assert failures(root) == ["r_0601_1110_aaaa"]
    assert setting(root, "notify.toldRuns") == ["r_0601_1110_aaaa"]

    # A crash the tick's own reconcile finds is told once too.
    _crashed_scheduled_run(root, "r_0601_1140_bbbb", "summary", "2026-06-01T10:40:00Z", monkeypatch)
    tick(root, "2026-06-01T10:41:00Z")
    tick(root, "2026-06-01T10:42:00Z")
    assert failures(root) == ["r_0601_1110_aaaa", "r_0601_1140_bbbb"]
    assert setting(root, "notify.toldRuns") == ["r_0601_1110_aaaa", "r_0601_1140_bbbb"]
    assert notify_log(root) == []


def test_a_crash_whose_asset_has_succeeded_since_is_not_news(project, monkeypatch):
    root = project()
    _crashed_scheduled_run(root, "r_0601_1001_aaaa", "summary", "2026-06-01T10:01:00Z", monkeypatch)
    code, by_hand = croft_json(root, "2026-06-01T10:02:00Z", "run", "summary")  # reconciles, then succeeds
    assert code == 0 and by_hand["ok"]
    tick(root, "2026-06-01T10:03:00Z")
    assert desktop(root) == [] and notify_log(root) == []
    assert setting(root, "notify.toldRuns") == ["r_0601_1001_aaaa"]  # claimed, so never looked at again


def test_the_told_list_claims_each_crash_once_and_keeps_only_the_last_days(make_project, monkeypatch):
    from croft.core.clock import parse_instant
    from croft.engine.reconcile import reconcile
    from croft.history.db import open_history
    from croft.scheduler.tick.tell import claim_crashed

    root = make_project()
    conn = open_history(root / ".croft")
    try:
        assert claim_crashed(conn, parse_instant("2026-06-01T10:00:00Z")) == []
        assert setting(root, "notify.toldRuns") is None  # nothing crashed: nothing written
        _crashed_scheduled_run(root, "r_a", "orders", "2026-06-01T10:00:00Z", monkeypatch)
        _crashed_scheduled_run(root, "r_b", "orders", "2026-06-01T10:00:00Z", monkeypatch)
        assert reconcile(conn) == ["r_a", "r_b"]
        now = parse_instant("2026-06-01T10:01:00Z")
        assert claim_crashed(conn, now) == ["r_a", "r_b"]
        assert claim_crashed(conn, now) == []
        assert setting(root, "notify.toldRuns") == ["r_a", "r_b"]
        _crashed_scheduled_run(root, "r_c", "orders", "2026-06-03T10:00:00Z", monkeypatch)
        reconcile(conn)
        assert claim_crashed(conn, parse_instant("2026-06-03T10:01:00Z")) == ["r_c"]
        assert setting(root, "notify.toldRuns") == ["r_c"]
    finally:
        conn.close()


def test_a_run_that_could_not_be_spawned_is_told_once_where_it_failed(project, monkeypatch):
    from croft.core.clock import parse_instant
    from croft.project.config import load_project
    from croft.scheduler.tick import start as startrun
    from croft.scheduler.tick.project_tick import project_tick

    root = project()

    def no_fork(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(startrun, "start_due_run", no_fork)
    monkeypatch.setenv("CROFT_NOW", T0)
    data, problems = project_tick(load_project(root), parse_instant(T0))
    assert data["spawned"] == [] and [p.code for p in problems] == ["INTERNAL_ERROR"]
    [note] = desktop(root)
    assert note["event"] == "failed" and note["runId"] == problems[0].details["runId"]
    assert note["body"].startswith(
        "issues failed in a scheduled run: INTERNAL_ERROR: the scheduler could not"
    )
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:10:00Z")
    later, _ = project_tick(load_project(root), parse_instant("2026-06-01T10:10:00Z"))
    assert later["held"][0]["code"] == "SCHEDULE_BACKOFF" and len(desktop(root)) == 1


def test_a_run_that_crashed_before_starting_all_its_assets_gives_one_message_naming_both(
    project, monkeypatch
):
    root = project()
    assert tick(root, T0)["spawned"]
    # As a tick leaves it: the run noted with two assets; it recorded itself, started one, then died.
    note(root, "r_0601_1110_cccc", ["issues", "summary"], "2026-06-01T10:10:00Z", {})
    _crashed_scheduled_run(root, "r_0601_1110_cccc", "issues", "2026-06-01T10:10:00Z", monkeypatch)
    _, found = croft_json(root, "2026-06-01T10:11:00Z", "tick")
    [warning] = [p for p in found["problems"] if p["code"] == "RUN_CRASHED"]
    assert "did not start summary" in warning["message"]
    [message] = desktop(root)
    assert message["runId"] == "r_0601_1110_cccc"
    assert "issues" in message["body"] and "summary" in message["body"] and "RUN_CRASHED" in message["body"]
    tick(root, "2026-06-01T10:12:00Z")
    assert len(desktop(root)) == 1
