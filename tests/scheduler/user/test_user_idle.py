"""`croft tick --all` beats an idle project in-process (the project tick's own idle check) and starts a
real project tick only when the memo no longer holds; the heartbeat it writes is the one SCHEDULER_STALE
reads, and it never beats a paused project."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from schedulekit import ISSUES, croft_json, query, runs_of, setting, wait_for_runs
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.core.problems import problem
from croft.history.db import open_history
from croft.project.config import load_project
from croft.scheduler import heartbeat, incidents
from croft.scheduler.control.diagnosis import stale_warning
from croft.scheduler.control.doctor import doctor
from croft.scheduler.incidents import incident_path
from croft.scheduler.setting import write_scheduling
from croft.scheduler.tick import memo as idle
from croft.scheduler.user import tick_all as usertick
from croft.scheduler.user import wakestate as idlebeat
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes


def _set(root: Path, state: str, at: str) -> None:
    conn = open_history(root / ".croft")
    try:
        write_scheduling(conn, state, parse_instant(at), via="os-job")  # type: ignore[arg-type]
    finally:
        conn.close()


def _on_project(make_project, **config: object) -> Path:  # type: ignore[no-untyped-def]
    """An hourly ingest run by hand at 10:05 (so approved and not due until 11:00), scheduling on via the
    OS job and registered."""
    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")}, timezone="UTC", **config)
    code, ran = croft_json(root, "2026-06-01T10:05:00Z", "run")
    assert code == 0, ran
    _set(root, "on", "2026-06-01T10:06:00Z")
    Registry().add(root, "os-job", parse_instant("2026-06-01T10:06:00Z"))
    return root  # type: ignore[no-any-return]


def _tick_all(monkeypatch: pytest.MonkeyPatch, at: str) -> dict:  # type: ignore[type-arg]
    monkeypatch.setenv("CROFT_NOW", at)
    return usertick.tick_all()


def _wait_full_tick(root: Path, at: str) -> None:
    """Until the real project tick started at ``at`` has beaten, left its idle memo and ended."""
    stamp = parse_instant(at).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def ended() -> bool:
        memo = setting(root, "schedule.idle")
        holder = query(root, "SELECT pid FROM tick WHERE id = 1")
        done = bool(holder) and holder[0]["pid"] is None  # the tick let go of its singleton: it ended
        return (
            heartbeat.last_heartbeat(root / ".croft") == stamp and bool(memo) and memo["at"] == stamp and done
        )

    wait_for(
        ended,
        lambda: f"the project tick of {at} to leave its heartbeat and memo: {setting(root, 'schedule.idle')}",
    )


def test_an_idle_project_is_beaten_in_process_and_a_change_starts_its_tick(
    make_project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    root = _on_project(make_project)
    log = _croft_home / "logs" / "tick.log"

    # no memo yet: a real project tick is started; it finds nothing due and leaves the memo
    first = _tick_all(monkeypatch, "2026-06-01T10:10:00Z")
    assert [s["root"] for s in first["started"]] == [str(root)] and first["beat"] == []
    _wait_full_tick(root, "2026-06-01T10:10:00Z")

    # the memo holds: the heartbeat is written here and no interpreter is started
    idle = _tick_all(monkeypatch, "2026-06-01T10:20:00Z")
    assert idle["started"] == [] and idle["skipped"] == []
    assert idle["beat"] == [{"root": str(root), "heartbeatAt": "2026-06-01T10:20:00.000Z"}]
    assert heartbeat.last_heartbeat(root / ".croft") == "2026-06-01T10:20:00.000Z"
    beats = json.loads((_croft_home / "idle-beats.json").read_text())  # one file for the user's minute
    assert beats == {"at": "2026-06-01T10:20:00.000Z", "roots": [str(root)]}
    assert not (root / ".croft" / "tick-beat").exists()  # no file per project
    assert "10:20:00.000Z" not in log.read_text()  # an idle beat writes no log line
    project = load_project(root)
    assert stale_warning(project, now=parse_instant("2026-06-01T10:22:59Z")) is None
    stale = stale_warning(project, now=parse_instant("2026-06-01T10:23:30Z"))
    assert stale is not None and stale.code == "SCHEDULER_STALE"
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:22:00Z")
    checks = {c["check"]: c for c in doctor().data["checks"]}
    assert (
        checks[f"project {root}"]["ok"]
        and "last tick 2026-06-01T10:20:00.000Z" in checks[f"project {root}"]["detail"]
    )
    code, status = croft_json(root, "2026-06-01T10:22:00Z", "status")
    assert status["data"]["scheduling"]["heartbeatAt"] == "2026-06-01T10:20:00.000Z"
    assert not any(p["code"] == "SCHEDULER_STALE" for p in status["problems"])

    # paused: neither a beat nor a tick, so the heartbeat stays where it was
    code, paused = croft_json(root, "2026-06-01T10:29:00Z", "schedule", "pause")
    assert code == 0, paused
    held = _tick_all(monkeypatch, "2026-06-01T10:30:00Z")
    assert held["beat"] == held["started"] == [] and held["skipped"][0]["reason"] == "scheduling is paused"
    assert heartbeat.last_heartbeat(root / ".croft") == "2026-06-01T10:20:00.000Z"

    # on again: the setting the memo was made under changed, so the full tick decides
    _set(root, "on", "2026-06-01T10:31:00Z")
    again = _tick_all(monkeypatch, "2026-06-01T10:32:00Z")
    assert [s["root"] for s in again["started"]] == [str(root)] and again["beat"] == []
    _wait_full_tick(root, "2026-06-01T10:32:00Z")
    assert _tick_all(monkeypatch, "2026-06-01T10:40:00Z")["beat"][0]["root"] == str(root)

    # the next fire (11:00) ends the memo's window: the full tick starts the scheduled run
    fired = _tick_all(monkeypatch, "2026-06-01T11:00:30Z")
    assert [s["root"] for s in fired["started"]] == [str(root)] and fired["beat"] == []
    wait_for(lambda: any(r["trigger"] == "schedule" for r in runs_of(root)), "the scheduled run to start")
    wait_for_runs(root)
    assert [(r["trigger"], r["status"]) for r in runs_of(root)][-1] == ("schedule", "succeeded")


def test_a_steady_stamp_skips_even_the_idle_check_and_any_change_brings_it_back(
    make_project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    root = _on_project(make_project)
    _tick_all(monkeypatch, "2026-06-01T10:10:00Z")
    _wait_full_tick(root, "2026-06-01T10:10:00Z")
    # A minute apart, files written by the last full tick are long settled; here they are milliseconds old,
    # which the racy-stamp rule would (rightly) distrust. The rule itself is tested below.
    monkeypatch.setattr(idlebeat, "RACY_NS", 0)
    checks: list[str] = []
    real = idle.memo_holds
    monkeypatch.setattr(idle, "memo_holds", lambda r, at: checks.append(at) or real(r, at))
    db = root / ".croft" / "runs.sqlite"
    for minute in range(11, 16):
        at = f"2026-06-01T10:{minute}:00Z"
        assert [b["heartbeatAt"][:16] for b in _tick_all(monkeypatch, at)["beat"]] == [at[:16]]
    # the memo is checked until the stamp is steady (a reader's leftover WAL file goes at the first check's
    # close), then minutes only compare stats; runs.sqlite is never written by an idle beat
    assert checks[0] == "2026-06-01T10:11:00.000Z" and checks[1:] in ([], ["2026-06-01T10:12:00.000Z"])
    before = db.stat().st_mtime_ns
    assert _tick_all(monkeypatch, "2026-06-01T10:16:00Z")["beat"] and db.stat().st_mtime_ns == before
    assert heartbeat.last_heartbeat(root / ".croft") == "2026-06-01T10:16:00.000Z"

    # an asset edited in place moves its own stat only: the next minute runs the check, which fails, and
    # the project tick is started
    (root / "assets" / "issues.py").write_text(ISSUES.format(schedule="every 30 minutes"))
    edited = _tick_all(monkeypatch, "2026-06-01T10:17:00Z")
    assert [s["root"] for s in edited["started"]] == [str(root)] and edited["beat"] == []
    assert checks[-1] == "2026-06-01T10:17:00.000Z"


def test_an_asset_saved_by_rename_or_added_is_seen_the_next_minute_whatever_the_turn(
    make_project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    """What moves a folder's stat (a save by rename, as most editors and git do; a file added or removed)
    is looked at every minute, as an asset file's own stat is."""
    root = _on_project(make_project)
    _tick_all(monkeypatch, "2026-06-01T10:10:00Z")
    _wait_full_tick(root, "2026-06-01T10:10:00Z")
    monkeypatch.setattr(idlebeat, "RACY_NS", 0)  # files milliseconds old here; a minute apart in life
    for minute in (11, 12):
        assert _tick_all(monkeypatch, f"2026-06-01T10:{minute}:00Z")["beat"]
    saved = root / "assets" / ".issues.py.swp"
    saved.write_text(ISSUES.format(schedule="every 30 minutes"))
    os.replace(saved, root / "assets" / "issues.py")
    renamed = _tick_all(monkeypatch, "2026-06-01T10:13:00Z")
    assert [s["root"] for s in renamed["started"]] == [str(root)] and renamed["beat"] == []


def test_an_incident_recorded_since_the_stamp_ends_the_idle_beat(
    make_project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    """The incidents folder is listed once a minute, not stat'ed per project: an incident that appears
    for a beaten project (a tick failed since) still moves its stamp, and the project gets a full tick."""
    root = _on_project(make_project)
    _tick_all(monkeypatch, "2026-06-01T10:10:00Z")
    _wait_full_tick(root, "2026-06-01T10:10:00Z")
    monkeypatch.setattr(idlebeat, "RACY_NS", 0)  # files milliseconds old here; a minute apart in life
    for minute in (11, 12):
        assert [b["root"] for b in _tick_all(monkeypatch, f"2026-06-01T10:{minute}:00Z")["beat"]] == [
            str(root)
        ]
    failed = problem("SCHEDULER_BROKEN", "the project tick failed", "See the tick log.")
    at = parse_instant("2026-06-01T10:12:30Z")
    incidents.record(str(root) + "-elsewhere", failed, at, "tick", _croft_home)  # another's: no matter
    assert [b["root"] for b in _tick_all(monkeypatch, "2026-06-01T10:13:00Z")["beat"]] == [str(root)]
    incidents.record(str(root), failed, at, "tick", _croft_home)  # what a project tick that failed leaves
    failed_since = _tick_all(monkeypatch, "2026-06-01T10:14:00Z")
    assert failed_since["beat"] == [] and [s["root"] for s in failed_since["started"]] == [str(root)]
    _wait_full_tick(root, "2026-06-01T10:14:00Z")


def test_a_stamp_taken_in_the_same_moment_as_a_write_is_not_trusted(make_project, _croft_home: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")}, timezone="UTC")
    old = time.time_ns() - 10_000_000_000
    for path in (root / "croft.json", root / "assets" / "issues.py", root / "assets"):
        os.utime(path, ns=(old, old))
    targets = idlebeat._targets(str(root), [])
    assert targets == (["assets"], ["assets/issues.py"])  # besides FIXED: the history, its WAL, croft.json
    assert idlebeat.FIXED == (".croft/runs.sqlite", ".croft/runs.sqlite-wal", "croft.json")
    incident = incident_path(str(root), str(_croft_home))
    stamp = idlebeat._stamp(str(root), *targets, incident)
    assert stamp is not None and stamp[2]  # everything settled: safe to compare later
    assert (
        idlebeat._stamp(str(root), *targets, incident) == stamp
    )  # the same in every process: the hash of numbers
    (root / "assets" / "issues.py").write_text(ISSUES.format(schedule="every hour"))
    moved = idlebeat._stamp(str(root), *targets, incident)
    assert moved is not None and not moved[2] and moved[1] != stamp[1]  # just written: not trusted
    assert moved[0] == stamp[0]  # edited in place: only the files' stamp moves
    os.utime(root / "assets" / "issues.py", ns=(old, old))
    (root / "assets" / "new.sql").write_text("SELECT 1 AS id\n")  # a file added moves its folder's stat
    os.utime(root / "assets" / "new.sql", ns=(old, old))
    added = idlebeat._stamp(str(root), targets[0], None, incident)
    assert added is not None and added[0] != stamp[0] and added[1] is None  # the files not asked


def test_the_stamp_is_the_same_in_another_process(make_project) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")}, timezone="UTC")
    code = (
        "import sys; from croft.scheduler.user import wakestate as c;"
        "print(c._stamp(sys.argv[1], *c._targets(sys.argv[1], []), '/nowhere/incident.json')[:2])"
    )
    runs = {subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True).stdout
            for _ in range(2)}  # fmt: skip
    here = idlebeat._stamp(str(root), *idlebeat._targets(str(root), []), "/nowhere/incident.json")
    assert runs == {f"{here[:2]}\n"}  # type: ignore[index]


def test_last_heartbeat_is_the_latest_of_the_tick_row_and_the_idle_beats(
    tmp_path: Path, _croft_home: Path
) -> None:
    root = tmp_path / "p"
    state = root / ".croft"
    state.mkdir(parents=True)
    assert heartbeat.last_heartbeat(state) is None
    (state / "tick-beat").write_text("2026-06-01T10:20:00.000Z")  # a per-project beat file: not a source
    assert heartbeat.last_heartbeat(state) is None
    heartbeat.write_user_beats(str(_croft_home), "2026-06-01T10:21:00.000Z", [str(tmp_path / "other")])
    assert heartbeat.last_heartbeat(state) is None  # another project's beat is not this one's
    heartbeat.write_user_beats(
        str(_croft_home), "2026-06-01T10:22:00.000Z", [str(tmp_path / "other"), str(root)]
    )
    assert heartbeat.last_heartbeat(state) == "2026-06-01T10:22:00.000Z"
    assert heartbeat.last_heartbeat(tmp_path / "elsewhere" / "state") is None  # a relocated state folder
    (_croft_home / "idle-beats.json").write_text("{not json")
    assert heartbeat.last_heartbeat(state) is None


def test_a_project_with_a_ping_is_beaten_in_process_and_tick_all_sends_its_ping(
    make_project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path, server
) -> None:  # type: ignore[no-untyped-def]
    """The dead-man's switch of a project whose idle check holds goes out from tick --all itself: no
    process of its own, one GET per completed tick, idle or full; a ping that fails is a notify.log line."""
    server.route("GET", "/ping", server.reply(200, "ok"))
    root = _on_project(make_project, notify={"ping": server.url("/ping")})
    first = _tick_all(monkeypatch, "2026-06-01T10:10:00Z")  # no memo yet: a full tick, in a worker
    assert [s["root"] for s in first["started"]] == [str(root)]
    _wait_full_tick(root, "2026-06-01T10:10:00Z")
    assert len(server.requests_to("/ping")) == 1  # sent once the full tick had answered
    later = _tick_all(monkeypatch, "2026-06-01T10:20:00Z")
    assert later["started"] == [] and [b["root"] for b in later["beat"]] == [str(root)]
    assert len(server.requests_to("/ping")) == 2
    assert _tick_all(monkeypatch, "2026-06-01T10:21:00Z")["beat"]  # the stamp only, this time
    assert len(server.requests_to("/ping")) == 3 and all(
        r.method == "GET" for r in server.requests_to("/ping")
    )
    other = _on_project(
        make_project, root=root.parent / "refused", notify={"ping": "http://127.0.0.1:9/ping"}
    )
    _tick_all(monkeypatch, "2026-06-01T10:22:00Z")
    _wait_full_tick(other, "2026-06-01T10:22:00Z")
    wait_for(lambda: (other / ".croft/logs/notify.log").is_file(), "the refused ping's line in notify.log")
    assert "ping 127.0.0.1:9" in (other / ".croft/logs/notify.log").read_text()
    assert len(server.requests_to("/ping")) == 4  # the first project's ping still went out


def test_the_stamp_moves_with_the_owner_or_mode_of_what_the_trust_check_reads(
    make_project, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    """The idle path beats a project without asking the trust check again only while the stamp holds, so
    a chmod of the project's folder, .croft/ or lib/ (made or not) must move it; a file made inside
    .croft/ (its -wal and -shm come and go with every open) must not."""
    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")}, timezone="UTC")
    (root / ".croft").mkdir(exist_ok=True)
    targets = idlebeat._targets(str(root), [])
    incident = incident_path(str(root), str(_croft_home))
    first = idlebeat._stamp(str(root), *targets, incident)[0]  # type: ignore[index]
    (root / ".croft" / "runs.sqlite-shm").write_text("")
    (root / ".croft" / "runs.sqlite-shm").unlink()
    assert idlebeat._stamp(str(root), *targets, incident)[0] == first  # the folder's mtime is not stamped
    (root / ".croft" / "runs.sqlite-wal").write_text("")  # what a reader's open leaves: holds nothing
    assert idlebeat._stamp(str(root), *targets, incident)[0] == first
    (root / ".croft" / "runs.sqlite-wal").write_text("frames")
    assert idlebeat._stamp(str(root), *targets, incident)[0] != first
    (root / ".croft" / "runs.sqlite-wal").unlink()
    for part in (root, root / ".croft"):
        mode = part.stat().st_mode
        part.chmod(mode | 0o002)
        assert idlebeat._stamp(str(root), *targets, incident)[0] != first, part
        part.chmod(mode)
        assert idlebeat._stamp(str(root), *targets, incident)[0] == first
    (root / "lib").mkdir()
    assert idlebeat._stamp(str(root), *targets, incident)[0] != first  # a lib/ made since is read too
