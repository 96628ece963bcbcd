"""croft schedule on/off/pause/status and the staleness diagnosis."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from jobskit import FakeOS

from croft.cli.group import build_group
from croft.core.clock import parse_instant, to_iso
from croft.core.identity import current
from croft.core.problems import CroftError
from croft.history.db import open_history
from croft.history.state import write_tick
from croft.project.config import load_project
from croft.scheduler import heartbeat
from croft.scheduler.control.chain import Chain, Interpreter, Place, diagnose
from croft.scheduler.control.commands import (
    parse_pause_length,
    schedule_off,
    schedule_on,
    schedule_pause,
)
from croft.scheduler.control.schedulestatus import schedule_status
from croft.scheduler.jobs import crontab
from croft.scheduler.jobs import record as jobrecord
from croft.scheduler.jobs.base import JobState
from croft.scheduler.jobs.crontab import cron_daemon_link
from croft.scheduler.setting import Scheduling, read_scheduling_file
from croft.scheduler.ticklog import log_tail
from croft.scheduler.user.registry import Registry

NOW = "2026-03-01T12:00:00Z"
INGEST = """
from croft import ingest

@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield {"id": 1}
"""


@pytest.fixture
def proj(make_project, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CROFT_NOW", NOW)
    monkeypatch.setenv("CROFT_HEARTBEAT_WAIT_MS", "300")
    return load_project(make_project({"assets/orders.py": INGEST}))


def beat(project, at: str) -> None:  # type: ignore[no-untyped-def]
    conn = open_history(project.config.state_dir)
    try:
        write_tick(conn, current(), to_iso(parse_instant(at)))
    finally:
        conn.close()


def test_on_writes_setting_registry_and_job_then_sees_the_first_tick(proj, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CROFT_HEARTBEAT_WAIT_MS", "5000")
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    fake = FakeOS()
    threading.Timer(0.3, beat, (proj, NOW)).start()
    result = schedule_on(proj, backend_name="crontab", runner=fake)
    assert result.is_ok and result.exit_code == 0
    assert read_scheduling_file(proj.config.state_dir).state == "on"
    assert Registry().find(proj.root).via == "os-job"  # type: ignore[union-attr]
    assert "# croft:dev.croft.test" in fake.crontab and " -S -P " in fake.crontab
    assert jobrecord.read()["backend"] == "crontab"  # type: ignore[index]
    tick = result.data["firstTick"]
    assert tick["ok"] and not tick["alreadyTicking"] and 200 <= tick["waitedMs"] < 5000
    assets = {a["asset"]: a for a in result.data["assets"]}
    assert (
        assets["orders"]["cron"] == "0 * * * *" and assets["orders"]["nextFire"] == "2026-03-01T13:00+00:00"
    )
    assert assets["orders"]["held"]["release"] == "croft run orders"
    assert [n.command for n in result.next] == ["croft run orders"]
    # again, job unchanged and ticking: no wait
    again = schedule_on(proj, backend_name="crontab", runner=fake)
    assert again.data["firstTick"] == {"ok": True, "alreadyTicking": True, "waitedMs": 0}


def test_on_without_a_tick_warns_stale_with_the_cause_and_log_tail_and_stays_on(  # type: ignore[no-untyped-def]
    proj, _croft_home: Path, monkeypatch
) -> None:
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    log = _croft_home / "logs" / "tick.log"
    log.parent.mkdir()
    log.write_text("".join(f"line {i}\n" for i in range(30)) + "/usr/bin/python3: No module named croft\n")
    result = schedule_on(proj, backend_name="crontab", runner=FakeOS())
    assert result.exit_code == 1  # no tick came: on, and said loudly
    (p,) = [p for p in result.problems if p.code == "SCHEDULER_STALE"]
    assert p.severity == "error"  # on, but nothing ticks it: exit 1, as its page says
    assert p.message.startswith("no scheduler tick arrived within 300 ms of turning scheduling on: ")
    assert p.details["cause"] == "croft_missing" and p.details["waitedMs"] == 300  # type: ignore[index]
    assert p.details["logTail"][-1] == "/usr/bin/python3: No module named croft"  # type: ignore[index]
    assert len(p.details["logTail"]) == 20  # type: ignore[index]
    assert read_scheduling_file(proj.config.state_dir).state == "on"


def test_install_failure_restores_setting_and_registry(proj) -> None:  # type: ignore[no-untyped-def]
    schedule_on(proj, no_os_job=True)
    before = read_scheduling_file(proj.config.state_dir)
    failing = FakeOS({("crontab", "-"): [(1, "", "crontab: permission denied\n")]})
    with pytest.raises(CroftError) as err:
        schedule_on(proj, backend_name="crontab", runner=failing)
    assert err.value.code == "INSTALL_FAILED" and "permission denied" in err.value.problem.message
    assert read_scheduling_file(proj.config.state_dir) == before  # via serve, since unchanged
    assert Registry().find(proj.root).via == "serve"  # type: ignore[union-attr]
    assert jobrecord.read() is None


def test_install_failure_of_a_new_project_leaves_it_off_and_unregistered(proj) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CroftError):
        schedule_on(proj, backend_name="crontab", runner=FakeOS({("crontab",): [(None, "", "")]}))
    assert read_scheduling_file(proj.config.state_dir).state == "off"
    assert Registry().entries() == []


def test_off_removes_the_job_only_when_no_project_needs_it(proj, make_project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOS()
    fake.crontab = "MAILTO=''\n0 3 * * * /usr/bin/backup  --all\n"
    other = load_project(make_project({}, root=tmp_path / "other"))
    schedule_on(proj, backend_name="crontab", runner=fake)
    schedule_on(other, backend_name="crontab", runner=fake)
    schedule_off(proj, runner=fake)
    assert "# croft:dev.croft.test" in fake.crontab
    result = schedule_off(other, runner=fake)
    assert fake.crontab == "MAILTO=''\n0 3 * * * /usr/bin/backup  --all\n"
    assert result.data["registry"]["projects"] == 0 and jobrecord.read() is None
    assert read_scheduling_file(proj.config.state_dir).state == "off"


def test_switching_to_no_os_job_removes_the_job(proj) -> None:  # type: ignore[no-untyped-def]
    fake = FakeOS()
    schedule_on(proj, backend_name="crontab", runner=fake)
    result = schedule_on(proj, no_os_job=True, runner=fake)
    assert fake.crontab == "" and "firstTick" not in result.data
    assert result.next[0].command == "croft serve"


def test_pause_for_and_until_on_and_refused_when_off(proj, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CroftError) as err:
        schedule_pause(proj, "2h")
    assert err.value.problem.message == "scheduling is off for this project, so there is nothing to pause"
    schedule_on(proj, no_os_job=True)
    result = schedule_pause(proj, "1h30m")
    assert result.data["scheduling"]["pausedUntil"] == "2026-03-01T13:30:00.000Z"
    assert result.data["scheduling"]["state"] == "paused" and "stale" not in result.data["scheduling"]
    # paused is never stale; three minutes after the pause ends, it is
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T13:32:00Z")
    assert schedule_status(proj).data["scheduling"]["stale"] is False
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T13:33:01Z")
    status = schedule_status(proj)
    assert status.data["scheduling"]["stale"] is True
    assert status.problems[0].details["cause"] == "serve_not_running"  # type: ignore[index]
    assert schedule_pause(proj, None).data["scheduling"].get("pausedUntil") is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90m", 5400),
        ("1h30m", 5400),
        ("2 days", 172800),
        ("1.5h", 5400),
        ("90 minutes", 5400),
        ("1w", 604800),
    ],
)
def test_pause_lengths(text: str, seconds: int) -> None:
    assert parse_pause_length(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["10s", "400d", "2", "soon", "", "1h soon"])
def test_bad_pause_lengths(text: str) -> None:
    with pytest.raises(CroftError) as err:
        parse_pause_length(text)
    assert err.value.problem.message == f'--for "{text}" is not a pause length'


# -- staleness -------------------------------------------------------------------------------------


def test_stale_rules() -> None:
    now = parse_instant("2026-03-01T12:00:00Z")
    on = Scheduling(state="on", via="os-job", since="2026-03-01T11:00:00.000Z")
    assert heartbeat.is_stale(on, "2026-03-01T11:57:00.000Z", now) is False  # exactly 3 min
    assert heartbeat.is_stale(on, "2026-03-01T11:56:59.000Z", now) is True
    assert heartbeat.is_stale(on, None, now) is True
    assert heartbeat.is_stale(on, "2026-03-01T12:05:00.000Z", now) is False  # a future heartbeat
    # ...but one more than 5 minutes ahead is itself the cause (a clock moved backwards), never health
    assert heartbeat.is_stale(on, "2026-03-01T12:05:00.001Z", now) is True
    assert heartbeat.is_stale(on, "2027-03-01T12:00:00.000Z", now) is True
    assert heartbeat.ahead_of("2027-03-01T12:00:00.000Z", now) and not heartbeat.ahead_of(None, now)
    future_on = Scheduling(state="on", via="os-job", since="2027-01-01T00:00:00.000Z")
    assert heartbeat.is_stale(future_on, None, now) is True  # turned on under a CROFT_NOW ahead
    assert heartbeat.is_stale(future_on, "2026-03-01T11:59:00.000Z", now) is False  # ticking now
    recent = Scheduling(state="on", via="os-job", since="2026-03-01T11:58:00.000Z")
    assert heartbeat.is_stale(recent, None, now) is False  # just turned on
    assert heartbeat.is_stale(Scheduling(state="off"), None, now) is False
    assert heartbeat.is_stale(Scheduling(state="paused", via="os-job"), None, now) is False


def job(backend: str = "crontab", loaded: bool | None = None, python: str = "/bin/sh") -> JobState:
    return JobState(backend, "dev.croft.test", True, loaded, python=python)


def chain(**kw) -> Chain:  # type: ignore[no-untyped-def]
    place = {"root": "/p", "via": "os-job", "registered_via": "os-job", "quiet": True}
    place |= {k: kw.pop(k) for k in ("via", "registered_via") if k in kw}
    base = {
        "job": job(),
        "interpreter": Interpreter("/bin/sh", said="/bin/sh runs and imports croft"),
        "serve_alive": False,
        "log": ("2026-03-01T11:00:00.000Z /p: tick started (pid 9)",),
        "platform": "linux",
        "backend_links": (cron_daemon_link(True),),
    }
    return Chain(places=(Place(**place),), **(base | kw))


@pytest.mark.parametrize(
    ("changes", "cause"),
    [
        ({"via": "serve", "registered_via": "serve"}, "serve_not_running"),
        ({"via": "serve", "registered_via": "serve", "serve_alive": True}, "serve_not_ticking"),
        ({"registered_via": None}, "not_registered"),
        ({"job": None}, "job_missing"),
        ({"job": job("launchd", loaded=False)}, "job_not_loaded"),
        (
            {"job": job(python="/nope/python"), "interpreter": Interpreter("/nope/python", found=False)},
            "interpreter_gone",
        ),
        ({"backend_links": (cron_daemon_link(False),)}, "cron_not_running"),
        ({"log_dir_exists": False}, "log_folder_missing"),
        (
            {
                "platform": "darwin",
                "log": ("PermissionError: [Errno 1] Operation not permitted: '/Users/me/Documents/p'",),
            },
            "privacy",
        ),
        ({"log": ("/bin/sh: 1: /old/venv/bin/python: not found",)}, "interpreter_gone"),
        ({"log": ("/usr/bin/python3: No module named croft",)}, "croft_missing"),
        ({"wsl": True}, "wsl"),
        ({"log": ()}, "unknown"),
        ({}, "unknown"),
    ],
)
def test_each_cause_is_named(changes: dict, cause: str) -> None:
    found = diagnose(chain(**changes))
    assert found.cause == cause
    if cause == "privacy":
        assert "~/Documents" in found.detail
    if cause == "unknown" and not changes:
        assert "end of the tick log" in found.detail


def test_causes_this_machine_can_tell_end_to_end(proj, monkeypatch, _croft_home: Path) -> None:  # type: ignore[no-untyped-def]
    """Real registry, job record and log: not registered -> job missing -> interpreter gone, with the tail."""
    fake = FakeOS()
    schedule_on(proj, backend_name="crontab", runner=fake)
    (_croft_home / "logs").mkdir(exist_ok=True)
    (_croft_home / "logs" / "tick.log").write_text("2026-03-01T12:00:00.000Z something happened\n")
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T12:04:00Z")

    def cause() -> tuple[str, list[str]]:
        from croft.scheduler.control.diagnosis import stale_warning

        warning = stale_warning(proj, fake)
        assert warning is not None and warning.code == "SCHEDULER_STALE"
        return warning.details["cause"], warning.details["logTail"]  # type: ignore[index]

    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    assert cause() == ("unknown", ["2026-03-01T12:00:00.000Z something happened"])
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: False)
    assert cause()[0] == "cron_not_running"
    record = jobrecord.read()
    fake.crontab = fake.crontab.replace(record["python"], "/gone/bin/python")  # type: ignore[index]
    assert cause()[0] == "interpreter_gone"
    fake.crontab = ""
    assert cause()[0] == "job_missing"
    Registry().remove(proj.root)
    assert cause()[0] == "not_registered"
    beat(proj, "2026-03-01T12:03:00Z")
    from croft.scheduler.control.diagnosis import stale_warning

    assert stale_warning(proj, fake) is None


def test_cli_status_json_and_bare_schedule(proj) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    out = runner.invoke(build_group(), ["schedule", "--project", str(proj.root), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)["data"]
    assert data["action"] == "status" and data["scheduling"]["state"] == "off"
    on = runner.invoke(
        build_group(), ["schedule", "on", "--no-os-job", "--project", str(proj.root), "--json"]
    )
    assert json.loads(on.output)["data"]["scheduling"] == {
        "state": "on",
        "via": "serve",
        "since": "2026-03-01T12:00:00.000Z",
        "lastTickAt": None,
        "stale": False,
    }
    human = runner.invoke(build_group(), ["schedule", "status", "--project", str(proj.root)])
    assert "Scheduling is on" in human.output and "orders" in human.output
    bad = runner.invoke(
        build_group(), ["schedule", "pause", "--for", "soon", "--project", str(proj.root), "--json"]
    )
    assert bad.exit_code == 2 and json.loads(bad.output)["problems"][0]["code"] == "USAGE"


def test_heartbeat_reader_never_creates_history(tmp_path: Path) -> None:
    assert heartbeat.last_heartbeat(tmp_path / "state") is None
    assert not (tmp_path / "state").exists()
    assert log_tail(tmp_path / "nope.log") == []


def test_croft_status_warns_when_the_scheduler_is_stale(proj, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    schedule_on(proj, no_os_job=True)
    fresh = json.loads(runner.invoke(build_group(), ["status", "--project", str(proj.root), "--json"]).output)
    assert not [p for p in fresh["problems"] if p["code"] == "SCHEDULER_STALE"]
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T12:03:01Z")
    out = runner.invoke(build_group(), ["status", "--project", str(proj.root), "--json"])
    assert out.exit_code == 1  # SCHEDULER_STALE's exit, as its page says; the envelope still reads
    (stale,) = [p for p in json.loads(out.output)["problems"] if p["code"] == "SCHEDULER_STALE"]
    assert stale["details"]["cause"] == "serve_not_running" and stale["fix"]["command"] == "croft serve"
    assert "the scheduler has not ticked since scheduling was turned on 3 min ago" in stale["message"]


def test_on_refuses_an_interpreter_that_cannot_import_croft(proj, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from croft.scheduler.jobs import spec as spec_module

    monkeypatch.setattr(spec_module.sys, "executable", "/usr/bin/false")
    fake = FakeOS()
    with pytest.raises(CroftError) as err:
        schedule_on(proj, backend_name="crontab", runner=fake)
    assert err.value.code == "INSTALL_FAILED" and "could not run croft" in err.value.problem.message
    assert fake.crontab == "" and read_scheduling_file(proj.config.state_dir).state == "off"


def test_systemd_on_warns_without_linger_or_graphical_session(proj, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("USER", "nobody-croft-test")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(proj.root / "xdg"))
    fake = FakeOS(
        {("loginctl",): [(0, "Linger=no\n", "")], ("systemctl", "--user", "is-active"): [(3, "", "")]}
    )
    result = schedule_on(proj, backend_name="systemd", runner=fake)
    # Only the linger warning: a checkout under /tmp adds the temporary-interpreter JOB_AT_RISK as well.
    (risk,) = [p for p in result.problems if p.code == "JOB_AT_RISK" and "linger" in p.message]
    assert "loginctl enable-linger nobody-croft-test" in risk.message
    assert risk.fix["command"] == "loginctl enable-linger nobody-croft-test"  # type: ignore[index]
    assert (proj.root / "xdg" / "systemd" / "user" / "dev.croft.test.timer").exists()
    monkeypatch.setenv("DISPLAY", ":0")
    again = schedule_on(proj, backend_name="systemd", runner=fake)
    assert not [p for p in again.problems if p.code == "JOB_AT_RISK" and "linger" in p.message]


def test_the_wait_reports_progress_every_10_s(proj, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from croft.scheduler.control import commands

    class FakeTime:
        t = 0.0

        def monotonic(self) -> float:
            return self.t

        def sleep(self, s: float) -> None:
            self.t += s

    monkeypatch.setattr(commands, "time", FakeTime())
    lines: list[str] = []
    waited = commands._wait_for_heartbeat(proj, parse_instant(NOW), 35_000, lines.append)
    assert waited is None
    assert lines == [f"waiting for the first scheduler tick… {s} s of 35 s" for s in (10, 20, 30)]


def test_switching_backend_removes_the_other_backends_job(proj, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(proj.root / "xdg"))
    monkeypatch.setenv("DISPLAY", ":0")
    fake = FakeOS({("systemctl", "--user", "is-active"): [(3, "", "")]})
    fake.crontab = "0 3 * * * /usr/bin/backup\n"
    schedule_on(proj, backend_name="crontab", runner=fake)
    assert "# croft:dev.croft.test" in fake.crontab
    result = schedule_on(proj, backend_name="systemd", runner=fake)
    assert fake.crontab == "0 3 * * * /usr/bin/backup\n"
    assert result.data["job"]["backend"] == "systemd" and jobrecord.read()["backend"] == "systemd"  # type: ignore[index]


def test_a_heartbeat_from_before_the_command_does_not_count(proj) -> None:  # type: ignore[no-untyped-def]
    from croft.scheduler.control import commands

    beat(proj, "2026-03-01T11:59:59Z")
    assert commands._wait_for_heartbeat(proj, parse_instant(NOW), 200, None) is None
    beat(proj, NOW)
    assert commands._wait_for_heartbeat(proj, parse_instant(NOW), 200, None) is not None


@pytest.mark.parametrize(
    ("word", "action"), [("enable", "on"), ("resume", "on"), ("stop", "off"), ("show", "status")]
)
def test_action_synonyms(proj, word: str, action: str) -> None:  # type: ignore[no-untyped-def]
    args = ["schedule", word, "--project", str(proj.root), "--json"] + (
        ["--no-os-job"] if action == "on" else []
    )
    out = CliRunner().invoke(build_group(), args)
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["data"]["action"] == action


def test_a_heartbeat_far_ahead_of_the_clock_loses_to_one_that_is_not(tmp_path, _croft_home: Path) -> None:  # type: ignore[no-untyped-def]
    """The tick row stamped a day ahead (a clock moved back) and a fresh idle beat: the fresh one is the
    last tick; alone, the one ahead is still returned, for the stale rule to name it."""
    from croft.core.identity import current
    from croft.history.db import open_history
    from croft.history.state import write_tick

    state = tmp_path / ".croft"
    conn = open_history(state)
    write_tick(conn, current(), "2026-03-02T12:00:00.000Z")
    conn.close()
    now = parse_instant("2026-03-01T12:00:00Z")
    assert heartbeat.last_heartbeat(state, now) == "2026-03-02T12:00:00.000Z"
    heartbeat.write_user_beats(str(_croft_home), "2026-03-01T11:59:00.000Z", [str(tmp_path.resolve())])
    assert heartbeat.last_heartbeat(state, now) == "2026-03-01T11:59:00.000Z"


def test_on_told_not_to_wait_says_installed_not_waited_and_exits_0(proj, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """CROFT_HEARTBEAT_WAIT_MS=0 once said "until the check marked ✖ holds" with every check ✔, and exit 1."""
    from croft.cli.schedule_text import schedule_text

    monkeypatch.setenv("CROFT_HEARTBEAT_WAIT_MS", "0")
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    result = schedule_on(proj, backend_name="crontab", runner=FakeOS())
    assert result.exit_code == 0 and result.is_ok, result.problems
    assert result.data["firstTick"] == {"ok": None, "alreadyTicking": False, "waitedMs": 0, "notWaited": True}
    assert all(c["ok"] for c in result.data["checked"])
    text = schedule_text(result.data)
    assert "✖" not in text and "may never have run" not in text
    assert "not waited for (CROFT_HEARTBEAT_WAIT_MS=0); the job is installed" in text
    assert read_scheduling_file(proj.config.state_dir).state == "on"


def test_resume_of_a_paused_project_whose_job_ticks_waits_for_nothing(proj, _croft_home, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A resume once waited for the next minute's tick (~50 s): paused, the project had no fresh beat,
    though the per-user job ticked all along. Now the job's own minute mark counts."""
    from croft.scheduler.user.tick_all import tick_all

    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    fake = FakeOS()
    threading.Timer(0.1, beat, (proj, NOW)).start()
    monkeypatch.setenv("CROFT_HEARTBEAT_WAIT_MS", "5000")
    assert schedule_on(proj, backend_name="crontab", runner=fake).data["firstTick"]["ok"]
    monkeypatch.setenv("CROFT_NOW", "2026-03-01T12:30:00Z")  # half an hour paused: the beat is old
    schedule_pause(proj, None, runner=fake)
    monkeypatch.setenv("CROFT_HEARTBEAT_WAIT_MS", "3000")  # no beat comes: a wait would end not ok
    tick_all()  # the OS job's minute, as cron runs it: the project is paused, so it only leaves its mark
    resumed = schedule_on(proj, backend_name="crontab", runner=fake)
    assert resumed.data["firstTick"] == {"ok": True, "alreadyTicking": True, "waitedMs": 0}
    assert read_scheduling_file(proj.config.state_dir).state == "on"
