"""The minute gate: it settles a minute only while every stamp of its wake file holds and the wake
instant has not come, and it imports nothing but ``os`` (the budget of the per-minute path lives here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from schedulekit import ISSUES, croft_json, runs_of, wait_for_runs
from waiting import wait_for

from croft.core import disk
from croft.core.clock import parse_instant
from croft.history.db import open_history
from croft.scheduler import heartbeat
from croft.scheduler.jobs.spec import job_spec
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user import gate, pingbeat, wakefile
from croft.scheduler.user.registry import Registry


def _home_with_project(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "projects.json").write_text("{}")
    (home / "tick-all.lock").write_text("")
    root = tmp_path / "p"
    (root / "assets").mkdir(parents=True)
    (root / ".croft").mkdir()
    (root / "croft.json").write_text("{}")
    (root / "assets" / "orders.py").write_text("x = 1\n")
    (root / ".croft" / "runs.sqlite").write_bytes(b"")
    old = 1_700_000_000_000_000_000  # stamps well in the past: trusted (not racy)
    for path in [
        home / "projects.json",
        root / "croft.json",
        root / "assets" / "orders.py",
        root / ".croft" / "runs.sqlite",
    ]:
        os.utime(path, ns=(old, old))
    for folder in [root / "assets", root / ".croft", root, home]:
        os.utime(folder, ns=(old, old))
    return home, root


def _leave(home: Path, root: Path, until: str = "2026-06-01T11:00:00.000Z") -> None:
    stamps = wakefile.Stamps(
        str(home), str(home / "projects.json"), {str(root): (["assets"], ["assets/orders.py"])}
    )
    assert stamps.safe and stamps.before is not None
    wakefile.write(stamps, {}, ("2026-06-01T10:10:00.000Z", until, [str(root)], [str(root / ".croft")], []))


def test_an_unchanged_minute_is_settled_with_its_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, root = _home_with_project(tmp_path)
    _leave(home, root)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    assert gate.gate(str(home)) == ""
    beats = json.loads((home / "idle-beats.json").read_text())
    assert beats == {"at": "2026-06-01T10:11:00.000Z", "roots": [str(root)]}
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:12:00Z")
    assert gate.gate(str(home)) == ""  # the heartbeat file its first minute made hands nothing on
    assert json.loads((home / "idle-beats.json").read_text())["at"] == "2026-06-01T10:12:00.000Z"
    monkeypatch.setenv("CROFT_NOW", str(1780312320000))  # epoch milliseconds: 2026-06-01T11:12:00Z
    assert gate.gate(str(home)) is None  # past the wake instant: the full tick's minute


def test_a_settled_minute_hands_its_caller_the_pings_it_owes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line of the gate's part: the pings the full tick left (url, state folder), given back
    as written, for the caller to send (``user.pingbeat``); the gate reads no JSON."""
    home, root = _home_with_project(tmp_path)
    stamps = wakefile.Stamps(
        str(home), str(home / "projects.json"), {str(root): (["assets"], ["assets/orders.py"])}
    )
    pings = [("https://hc-ping.example/s3cret?a=1\n", str(root / ".croft"))]
    after, until = "2026-06-01T10:10:00.000Z", "2026-06-01T11:00:00.000Z"
    wakefile.write(stamps, {}, (after, until, [str(root)], [str(root / ".croft")], pings))
    assert os.stat(home / gate.FILE).st_mode & 0o777 == 0o600  # a ping URL is its project's secret
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    owed = gate.gate(str(home))
    assert owed is not None and json.loads(owed) == [list(p) for p in pings]
    assert json.loads((home / "idle-beats.json").read_text())["roots"] == [str(root)]
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T11:00:00Z")
    assert gate.gate(str(home)) is None  # the instant has come: the full tick's minute, which pings itself


def test_the_owed_pings_go_out_and_a_line_croft_did_not_write_sends_none(tmp_path: Path, server) -> None:  # type: ignore[no-untyped-def]
    server.route("GET", "/ping", server.reply(200, "ok"))
    for line in ("not json", '{"a": 1}', '[["only a url"]]', f'[["{server.url("/ping")}", 3]]'):
        assert not pingbeat.ping_owed(line)  # the caller hands the minute to the full tick
    assert server.requests == []
    owed = json.dumps(
        [[server.url("/ping?n=1"), str(tmp_path / "a")], [server.url("/ping?n=2"), str(tmp_path / "b")]]
    )
    assert pingbeat.ping_owed(owed)
    assert sorted(r.query["n"] for r in server.requests_to("/ping")) == ["1", "2"]


@pytest.mark.parametrize(
    "change",
    [
        "saved-by-rename",
        "new-asset",
        "gone-asset",
        "config",
        "history",
        "mode",
        "knob",
        "clock-back",
        "incident",
    ],
)
def test_any_change_hands_the_minute_to_the_full_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    home, root = _home_with_project(tmp_path)
    _leave(home, root)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    asset = root / "assets" / "orders.py"
    if change == "saved-by-rename":  # how most editors and git write a file: its folder moves
        (root / "assets" / ".orders.py.swp").write_text("x = 2\n")
        os.replace(root / "assets" / ".orders.py.swp", asset)
    elif change == "gone-asset":
        asset.unlink()
    elif change == "new-asset":
        (root / "assets" / "more.py").write_text("")
    elif change == "config":
        (root / "croft.json").write_text('{"a": 1}')
    elif change == "history":
        (root / ".croft" / "runs.sqlite").write_bytes(b"x")
    elif change == "mode":
        os.chmod(root / "assets", 0o777)
    elif change == "knob":
        monkeypatch.setenv("CROFT_MAX_PARALLEL", "3")
    elif change == "clock-back":
        monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:05:00Z")
    elif change == "incident":
        (home / "incidents").mkdir()
    assert gate.gate(str(home)) is None
    assert not (home / "idle-beats.json").exists()


def test_an_edit_in_place_waits_for_the_next_full_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An asset rewritten in place (same inode, same folder) moves no path the gate stamps: with nothing
    held anywhere, that edit can only hold its asset, so the minute is still settled, and the next full
    minute (the instant the wake file names) compares every file again."""
    home, root = _home_with_project(tmp_path)
    _leave(home, root, until="2026-06-01T11:00:00.000Z")
    with open(root / "assets" / "orders.py", "r+") as handle:
        handle.write("x = 2\n")
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    assert gate.gate(str(home)) == ""
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T11:00:00Z")
    assert gate.gate(str(home)) is None


def test_one_disk_is_asked_once_for_its_room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Projects on one file system: the gate's part names one folder of it, not one per project."""
    home, root = _home_with_project(tmp_path)
    other = tmp_path / "q" / ".croft"
    other.mkdir(parents=True)
    stamps = wakefile.Stamps(str(home), str(home / "projects.json"), {str(root): (["assets"], [])})
    wakefile.write(stamps, {}, ("2026-06-01T10:10:00.000Z", "2026-06-01T11:00:00.000Z", [str(root)],
                                [str(root / ".croft"), str(other)], []))  # fmt: skip
    part = (home / gate.FILE).read_text().split("\n")
    assert part[4] == min(str(root / ".croft"), str(other))
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    assert gate.gate(str(home)) == ""


def test_no_wake_file_or_one_others_may_write_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, root = _home_with_project(tmp_path)
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    assert gate.gate(str(home)) is None
    _leave(home, root)
    os.chmod(home / gate.FILE, 0o666)
    assert gate.gate(str(home)) is None
    wakefile.forget(str(home))
    assert not (home / gate.FILE).exists()


def test_a_racy_stamp_leaves_the_gate_no_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, root = _home_with_project(tmp_path)
    (root / "croft.json").write_text("{}")  # written just now: a second write could keep its mtime
    stamps = wakefile.Stamps(str(home), str(home / "projects.json"), {str(root): ([], [])})
    assert stamps.before is None
    wakefile.write(stamps, {str(root): {"fresh": {"next": "x"}}}, ("a", "b", [], [], []))
    assert not wakefile.settles(str(home))
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    assert gate.gate(str(home)) is None
    assert wakefile.read_state(str(home)) == {
        str(root): {"fresh": {"next": "x"}}
    }  # the full tick's part kept


def test_the_gate_reads_only_its_part_and_the_full_tick_believes_only_what_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-project part after the gate's is never read by the gate (damaged, the minute is still
    settled); the full tick believes it only when it is whole and the file is this user's alone, and
    otherwise looks at every project in full."""
    home, root = _home_with_project(tmp_path)
    _leave(home, root)
    wake = home / gate.FILE
    wake.write_bytes(wake.read_bytes()[:-3] + b"{not json\n")
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:11:00Z")
    assert gate.gate(str(home)) == ""
    assert wakefile.read_state(str(home)) == {}
    stamps = wakefile.Stamps(
        str(home), str(home / "projects.json"), {str(root): (["assets"], ["assets/orders.py"])}
    )
    wakefile.write(stamps, {str(root): {"idle": []}}, None)
    assert not wakefile.settles(str(home)) and gate.gate(str(home)) is None
    assert wakefile.read_state(str(home)) == {str(root): {"idle": []}}
    os.chmod(wake, 0o620)
    assert wakefile.read_state(str(home)) == {}


def test_the_gate_keeps_the_disk_floor_and_the_beat_file_of_the_full_tick() -> None:
    assert gate.LOW_SPACE_BYTES == disk.LOW_SPACE_BYTES
    assert gate.BEATS == heartbeat.USER_BEATS


def test_the_gate_imports_only_os(tmp_path: Path) -> None:
    """What the OS job's minute loads on the gate's path: the budget, checked where it lives."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import croft.scheduler.user.gate\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert loaded - {"itertools", "operator", "_operator"} == {  # those two are in C, or nearly
        "croft",
        "croft.scheduler",
        "croft.scheduler.user",
        "croft.scheduler.user.gate",
    }


def _minute(at: str) -> subprocess.CompletedProcess[str]:
    """The OS job's own command at ``at`` (the gate's entry; past the gate, ``croft tick --all``)."""
    return subprocess.run(
        job_spec(sys.executable).argv(),
        capture_output=True,
        text=True,
        env=os.environ | {"CROFT_NOW": at},
        timeout=60,
    )


def _wait_settled(root: Path, home: Path, at: str) -> None:
    """Until the project tick started at ``at`` ended and a minute after it left a wake file."""

    def ended() -> bool:
        rows = open_history(root / ".croft").execute("SELECT pid FROM tick WHERE id = 1").fetchall()
        return bool(rows) and rows[0][0] is None

    wait_for(ended, f"the project tick of {at} to end")


@pytest.mark.processes
def test_the_os_job_minute_goes_through_the_gate_and_an_edit_is_seen(make_project, _croft_home: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")}, timezone="UTC")
    code, ran = croft_json(root, "2026-06-01T10:05:00Z", "run")
    assert code == 0, ran
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", parse_instant("2026-06-01T10:06:00Z"), via="os-job")
    conn.close()
    Registry().add(root, "os-job", parse_instant("2026-06-01T10:06:00Z"))
    old = 1_700_000_000_000_000_000  # what the minutes read, older than a racy stamp
    for path in [root / "croft.json", root / "assets" / "issues.py", root / "assets", root]:
        os.utime(path, ns=(old, old))
    log = _croft_home / "logs" / "tick.log"

    assert _minute("2026-06-01T10:10:00Z").returncode == 0  # no memo: a project tick
    _wait_settled(root, _croft_home, "2026-06-01T10:10:00Z")
    wait_for(lambda: "tick started" in log.read_text(), "the first minute's tick")
    for at in ("2026-06-01T10:11:00Z", "2026-06-01T10:12:00Z"):  # the idle check holds: the wake file
        assert _minute(at).returncode == 0
    assert wakefile.settles(str(_croft_home)), log.read_text()
    lines = log.read_text()
    done = _minute("2026-06-01T10:13:00Z")  # the gate's minute: a heartbeat, no line, no tick
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert log.read_text() == lines
    assert heartbeat.last_heartbeat(root / ".croft") == "2026-06-01T10:13:00.000Z"

    # an asset edited in place (same size, same inode): settled until the wake file's instant, whose full
    # minute sees code no one has run; saved by rename (as editors and git write), the next minute's
    asset = root / "assets" / "issues.py"
    with open(asset, "r+") as handle:
        handle.write(handle.read().replace('"n": 2', '"n": 3'))
    assert _minute("2026-06-01T10:14:00Z").returncode == 0
    assert log.read_text() == lines
    (root / "assets" / "issues.tmp").write_text(asset.read_text().replace('"n": 3', '"n": 4'))
    os.replace(root / "assets" / "issues.tmp", asset)
    assert _minute("2026-06-01T10:15:00Z").returncode == 0
    wait_for(lambda: "10:15" in log.read_text(), "the minute after the edit to be the full tick's")
    assert not wakefile.settles(str(_croft_home))
    _wait_settled(root, _croft_home, "2026-06-01T10:15:00Z")
    assert heartbeat.last_heartbeat(root / ".croft") == "2026-06-01T10:15:00.000Z"
    assert not [r for r in runs_of(root) if r["trigger"] == "schedule"]  # held: no one has run this code


@pytest.mark.processes
def test_a_fire_after_idle_minutes_is_not_taken_for_a_wake_up(
    make_project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    """Minutes settled without a project tick (the idle beat) are minutes the machine was awake: the fire
    that follows them is an ordinary one, not "woke after 50 minutes"."""
    from croft.scheduler.user import tick_all as usertick

    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")}, timezone="UTC")
    code, ran = croft_json(root, "2026-06-01T10:05:00Z", "run")
    assert code == 0, ran
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", parse_instant("2026-06-01T10:06:00Z"), via="os-job")
    conn.close()
    Registry().add(root, "os-job", parse_instant("2026-06-01T10:06:00Z"))
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T10:10:00Z")
    assert usertick.tick_all()["started"]
    _wait_settled(root, _croft_home, "2026-06-01T10:10:00Z")
    for at in ("2026-06-01T10:30:00Z", "2026-06-01T10:59:00Z"):  # idle minutes, beaten in-process
        monkeypatch.setenv("CROFT_NOW", at)
        assert usertick.tick_all()["beat"]
    monkeypatch.setenv("CROFT_NOW", "2026-06-01T11:00:30Z")
    assert usertick.tick_all()["started"]
    wait_for(lambda: any(r["trigger"] == "schedule" for r in runs_of(root)), "the scheduled run to start")
    wait_for_runs(root)
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert "11:00:30" in log and "woke after" not in log, log


def test_a_project_whose_scheduling_is_off_leaves_a_wake_file_and_turning_it_on_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:
    from schedulekit import scheduled

    from croft.scheduler.user import tick_all as usertick

    root = scheduled(tmp_path / "p", "off")
    Registry().add(root, "os-job", parse_instant("2026-03-01T11:00:00Z"))
    old = 1_700_000_000_000_000_000
    for path in [*root.rglob("*"), root, _croft_home / "projects.json"]:
        os.utime(path, ns=(old, old))
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T11:01:00Z")
    assert usertick.tick_all()["skipped"][0]["reason"] == "scheduling is off"
    assert wakefile.settles(str(_croft_home))
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T11:02:00Z")
    assert gate.gate(str(_croft_home)) == ""
    assert json.loads((_croft_home / "idle-beats.json").read_text())["roots"] == []  # off: no heartbeat
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", parse_instant("2026-03-01T11:02:10Z"), via="os-job")
    conn.close()
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T11:03:00Z")
    assert gate.gate(str(_croft_home)) is None  # its history moved: the full tick's minute


@pytest.mark.parametrize(
    "text",
    [
        "2026-06-01T10:11:00Z",
        "2026-06-01T10:11:00.250Z",
        "2024-02-29T23:59:59Z",
        "1999-12-31T23:59:59Z",
        "0002-01-01T00:00:00Z",
    ],
)
def test_the_gate_reads_a_utc_clock_as_croft_does(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate reads ``CROFT_NOW`` without ``datetime`` in its usual form: the same text the full tick's
    clock gives, and nothing at all (the full tick's minute, which says what is wrong) for a date that
    does not exist."""
    from croft.core.clock import to_iso

    monkeypatch.setenv("CROFT_NOW", text)
    assert gate._now() == to_iso(parse_instant(text))


@pytest.mark.parametrize("text", ["2026-02-29T10:00:00Z", "2026-04-31T10:00:00Z", "2026-06-01T24:00:00Z"])
def test_a_date_that_does_not_exist_is_left_to_the_full_tick(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROFT_NOW", text)
    assert gate._now() is None
    with pytest.raises(ValueError):
        parse_instant(text)
