"""doctor, the stale warning and `croft schedule on`'s wait agree: for a real broken state each names the same
link, with the same cause code, the same words and the same fix.

Every state is built for real: a project turned on, the per-user registry in this test's CROFT_HOME, the job
installed through FakeOS (tests/jobskit.py) standing in for crontab / systemctl / loginctl. Only what
probes the machine itself (is a cron daemon running, the platform) is patched.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from jobskit import FakeOS

from croft.cli.group import build_group
from croft.core.clock import parse_instant
from croft.core.problems import Problem
from croft.project.config import Project, load_project
from croft.scheduler.control import gather
from croft.scheduler.control.commands import schedule_on
from croft.scheduler.control.diagnosis import no_tick_problem, stale_warning
from croft.scheduler.control.doctor import doctor
from croft.scheduler.jobs import crontab
from croft.scheduler.jobs import record as jobrecord
from croft.scheduler.jobs.record import installed_job
from croft.scheduler.setting import read_scheduling_file
from croft.scheduler.user.registry import Registry

NOW = "2026-03-01T12:00:00Z"
LATER = "2026-03-01T12:04:00Z"  # 4 minutes without a tick: stale
WAIT_MS = 300


@pytest.fixture
def proj(make_project, monkeypatch: pytest.MonkeyPatch) -> Project:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CROFT_NOW", NOW)
    monkeypatch.setenv("CROFT_HEARTBEAT_WAIT_MS", str(WAIT_MS))
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    return load_project(make_project({}))


def said(project: Project, runner: FakeOS, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """What each of the three says of the project's chain as it is now, stale by four minutes."""
    monkeypatch.setenv("CROFT_NOW", LATER)
    checks = doctor(runner, project).data["checks"]
    stale = stale_warning(project, runner)
    setting = read_scheduling_file(project.config.state_dir)
    waited = no_tick_problem(project, setting, parse_instant(NOW), WAIT_MS, installed_job(runner))
    return {"doctor": checks, "stale": stale, "wait": waited}


def agree(seen: dict[str, object], check: str, cause: str) -> dict[str, str]:
    """The first failing doctor check is ``check``, and both problems name it with ``cause`` in its words."""
    checks = seen["doctor"]
    assert isinstance(checks, list)
    failing = next(c for c in checks if not c["ok"])
    assert failing["check"] == check, checks
    for key in ("stale", "wait"):
        found = seen[key]
        assert isinstance(found, Problem) and found.code == "SCHEDULER_STALE"
        assert found.details is not None
        assert (found.details["cause"], found.details["check"]) == (cause, check)
        assert found.message.endswith(f": {failing['detail']}"), (found.message, failing["detail"])
        assert (found.fix or {}).get("command") == failing["fix"]
    return failing  # type: ignore[no-any-return]


def on_with_crontab(project: Project, fake: FakeOS) -> None:
    result = schedule_on(project, backend_name="crontab", runner=fake)
    # on, but no tick comes in these worlds: SCHEDULER_STALE's exit 1, the line installed all the same
    assert result.exit_code == 1 and "# croft:dev.croft.test" in fake.crontab


def test_job_missing(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeOS()
    on_with_crontab(proj, fake)
    fake.crontab = ""  # someone ran `crontab -r`
    failing = agree(said(proj, fake, monkeypatch), "OS job", "job_missing")
    assert failing == {
        "check": "OS job",
        "ok": False,
        "detail": "the crontab job dev.croft.test is missing",
        "fix": "croft schedule on",
    }


def test_cron_daemon_not_running(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeOS()
    on_with_crontab(proj, fake)
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: False)
    failing = agree(said(proj, fake, monkeypatch), "cron daemon", "cron_not_running")
    assert failing["detail"] == "no cron daemon is running, so the crontab line never runs"
    assert failing["fix"] == "sudo service cron start"


def test_interpreter_gone(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeOS()
    on_with_crontab(proj, fake)
    python = jobrecord.read()["python"]  # type: ignore[index]
    fake.crontab = fake.crontab.replace(python, "/gone/venv/bin/python")  # the venv was deleted
    failing = agree(said(proj, fake, monkeypatch), "interpreter", "interpreter_gone")
    assert failing["detail"] == "the job runs /gone/venv/bin/python, which is gone"
    assert failing["fix"] == "croft schedule on"


def test_not_registered(proj: Project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path) -> None:
    fake = FakeOS()
    on_with_crontab(proj, fake)
    Registry().remove(proj.root)  # the registry lost it (put back from an old backup)
    failing = agree(said(proj, fake, monkeypatch), "registry", "not_registered")
    assert failing["detail"] == (
        f"{proj.root} is not in the per-user registry {_croft_home / 'projects.json'}, so the OS job never"
        " ticks it"
    )
    assert failing["fix"] == "croft schedule on"


def test_serve_not_running(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeOS()
    assert schedule_on(proj, no_os_job=True, runner=fake).exit_code == 0
    failing = agree(said(proj, fake, monkeypatch), "croft serve", "serve_not_running")
    assert failing["fix"] == "croft serve"
    assert fake.calls == []  # a serve project's chain never looks at an OS job


def test_job_not_loaded(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(proj.root / "xdg"))
    monkeypatch.setenv("DISPLAY", ":0")
    fake = FakeOS({("systemctl", "--user", "is-active"): [(3, "", "")]})
    schedule_on(proj, backend_name="systemd", runner=fake)
    failing = agree(said(proj, fake, monkeypatch), "job loaded", "job_not_loaded")
    assert failing["detail"] == "the systemd job dev.croft.test is installed but systemd has not loaded it"


def test_no_linger(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(proj.root / "xdg"))
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("USER", "nobody-croft-test")
    fake = FakeOS({("loginctl",): [(0, "Linger=no\n", "")]})
    schedule_on(proj, backend_name="systemd", runner=fake)
    failing = agree(said(proj, fake, monkeypatch), "linger", "no_linger")
    assert failing["fix"] == "loginctl enable-linger nobody-croft-test"
    assert "stops the timer when you log out" in failing["detail"]


def test_log_folder_missing(proj: Project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path) -> None:
    fake = FakeOS()
    on_with_crontab(proj, fake)
    shutil.rmtree(_croft_home / "logs")
    failing = agree(said(proj, fake, monkeypatch), "tick log", "log_folder_missing")
    assert str(_croft_home / "logs") in failing["detail"]


def test_macos_privacy(make_project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CROFT_NOW", NOW)
    monkeypatch.setenv("CROFT_HEARTBEAT_WAIT_MS", str(WAIT_MS))
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    project = load_project(make_project({}, root=tmp_path / "Documents" / "p"))
    fake = FakeOS()
    on_with_crontab(project, fake)
    monkeypatch.setattr(gather.sys, "platform", "darwin")
    failing = agree(said(project, fake, monkeypatch), f"project {project.root}", "privacy")
    assert "stops the job from reading ~/Documents" in failing["detail"]
    assert f"give {jobrecord.read()['python']} Full Disk Access" in failing["detail"]  # type: ignore[index]


def test_schedule_ons_own_wait_names_the_same_link(proj: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only no_tick_problem called by hand: `croft schedule on` itself, when its wait ends unanswered."""
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: False)
    fake = FakeOS()
    result = schedule_on(proj, backend_name="crontab", runner=fake)
    (waited,) = [p for p in result.problems if p.code == "SCHEDULER_STALE"]
    monkeypatch.setenv("CROFT_NOW", LATER)
    failing = next(c for c in doctor(fake, proj).data["checks"] if not c["ok"])
    assert waited.details is not None and waited.details["cause"] == "cron_not_running"
    # known before any wait: the daemon is checked first, and no tick is waited for
    assert waited.message == f"no scheduler tick can come yet: {failing['detail']}"
    assert result.data["firstTick"] == {"ok": False, "alreadyTicking": False, "waitedMs": 0}
    assert {"check": "cron daemon", "ok": False}.items() <= result.data["checked"][-1].items()
    assert result.exit_code == 1
    # a crontab that takes the line but keeps none of it: the job is missing right after the install
    forgetful = FakeOS({("crontab", "-l"): [(1, "", "no crontab for croft\n")]})
    monkeypatch.setenv("CROFT_NOW", NOW)
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    again = schedule_on(proj, backend_name="crontab", runner=forgetful)
    (waited,) = [p for p in again.problems if p.code == "SCHEDULER_STALE"]
    assert waited.details is not None and waited.details["cause"] == "job_missing"
    failing = next(c for c in doctor(forgetful, proj).data["checks"] if not c["ok"])
    assert waited.message.endswith(f": {failing['detail']}") and failing["check"] == "OS job"


def test_croft_doctor_run_in_a_project_missing_from_the_registry_says_so(
    make_project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CROFT_NOW", NOW)
    project = load_project(make_project({}))
    schedule_on(project, no_os_job=True)
    Registry().remove(project.root)
    monkeypatch.setenv("CROFT_NOW", LATER)
    monkeypatch.chdir(project.root / "assets")
    out = CliRunner().invoke(build_group(), ["doctor", "--json"])
    assert out.exit_code == 1
    checks = json.loads(out.output)["data"]["checks"]
    registry = checks[0]
    assert registry["check"] == "registry" and not registry["ok"]
    assert registry["fix"] == "croft schedule on --no-os-job"
    stale = stale_warning(project)
    assert stale is not None and stale.message.endswith(f": {registry['detail']}")
    human = CliRunner().invoke(build_group(), ["doctor"])
    assert f"✖ registry: {project.root} is not in the per-user registry" in human.output
    assert "    fix: croft schedule on --no-os-job" in human.output


def test_registry_unreadable(proj: Project, monkeypatch: pytest.MonkeyPatch, _croft_home: Path) -> None:
    fake = FakeOS()
    on_with_crontab(proj, fake)
    (_croft_home / "projects.json").write_text("[{")
    (_croft_home / "projects.json.bak").unlink()  # no last good copy to restore from
    failing = agree(said(proj, fake, monkeypatch), "registry", "registry_unreadable")
    assert failing["detail"].startswith(
        f"{_croft_home / 'projects.json'} is not a croft registry: invalid JSON"
    )
    assert failing["fix"] == f"mv {_croft_home / 'projects.json'} {_croft_home / 'projects.json.broken'}"
