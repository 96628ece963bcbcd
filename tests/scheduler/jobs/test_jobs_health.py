"""Each backend's own links of the scheduler chain (``Backend.health``) and the job record's one reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobskit import FakeOS

from croft.scheduler.jobs import crontab
from croft.scheduler.jobs import record as jobrecord
from croft.scheduler.jobs.crontab import CRON_START, Crontab, cron_daemon_link, cron_daemon_running
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.launchd import Launchd
from croft.scheduler.jobs.systemd import Systemd, linger_link


def test_the_cron_daemon_link_from_what_proc_showed() -> None:
    assert cron_daemon_link(True) == Link.holds("cron daemon", "a cron daemon is running")
    assert cron_daemon_link(False) == Link(
        "cron daemon",
        False,
        "no cron daemon is running, so the crontab line never runs",
        "cron_not_running",
        CRON_START,
    )
    unknown = cron_daemon_link(None)  # no /proc to look in (macOS): not a broken link
    assert unknown.ok and "cannot look" in unknown.detail


def test_cron_daemon_running_reads_process_names(tmp_path: Path) -> None:
    for pid, name in (("1", "init"), ("42", "cron"), ("self", "cron")):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "comm").write_text(name + "\n")
    assert cron_daemon_running(tmp_path) is True
    (tmp_path / "42" / "comm").write_text("bash\n")
    assert cron_daemon_running(tmp_path) is False  # "self" is not a pid
    assert cron_daemon_running(tmp_path / "no-proc") is None


def test_the_linger_link_carries_the_warnings_words_and_the_loginctl_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("USER", "nobody-croft-test")
    assert linger_link(None) == Link.holds("linger", "the user manager keeps running")
    broken = linger_link("the timer stops at logout")
    assert (broken.ok, broken.detail, broken.cause) == (False, "the timer stops at logout", "no_linger")
    assert broken.fix == "loginctl enable-linger nobody-croft-test"


def test_each_backend_brings_its_own_links(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: False)
    assert [(x.check, x.cause) for x in Crontab(FakeOS()).health()] == [("cron daemon", "cron_not_running")]
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("USER", "nobody-croft-test")
    lingerless = FakeOS({("loginctl",): [(0, "Linger=no\n", "")]})
    (link,) = Systemd(lingerless, directory=tmp_path).health()
    assert (link.check, link.cause, link.fix) == (
        "linger",
        "no_linger",
        "loginctl enable-linger nobody-croft-test",
    )
    assert lingerless.calls[-1][0] == ["loginctl", "show-user", "nobody-croft-test", "-p", "Linger"]
    assert Launchd(FakeOS(), directory=tmp_path, uid=501).health() == []


def test_installed_job_reads_the_record_once_and_asks_health_only_of_an_installed_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(crontab, "cron_daemon_running", lambda: True)
    fake = FakeOS()
    none = jobrecord.installed_job(fake)
    assert none.backend is None and none.state is None and none.health() == []
    jobrecord.write({"backend": "crontab", "label": "dev.croft.test", "python": "/opt/venv/bin/python"})
    missing = jobrecord.installed_job(fake)
    assert missing.state is not None and not missing.state.installed and missing.state.python is None
    assert missing.health() == []
    # a hand-edited line croft cannot read the interpreter from: the recorded one stands in
    fake.crontab = "* * * * * 'unclosed # croft:dev.croft.test\n"
    edited = jobrecord.installed_job(fake)
    assert edited.state is not None and edited.state.installed
    assert edited.state.python == "/opt/venv/bin/python"
    assert [x.check for x in edited.health()] == ["cron daemon"]
    jobrecord.write({"backend": "crontab", "label": "another.label", "python": "/x"})
    assert jobrecord.installed_job(fake).state is None  # another label's job is not ours
