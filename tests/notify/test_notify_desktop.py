"""Showing a desktop notification: the command run, its explicit environment, and every way it can fail
being one logged line instead of an exception."""

from __future__ import annotations

import json
import subprocess

from croft.notify.desktop import show
from croft.notify.message import Failed
from croft.notify.send import notify_scheduled_failure
from croft.project.config import load_project

SECRET = "sk_live_abcdef123456"


class FakeRunner:
    def __init__(self, returncode: int = 0, stderr: str = "", raises: Exception | None = None):
        self.calls: list[tuple[list[str], dict]] = []
        self.returncode, self.stderr, self.raises = returncode, stderr, raises

    def __call__(self, command, **kwargs):
        self.calls.append((command, kwargs))
        if self.raises:
            raise self.raises
        return subprocess.CompletedProcess(command, self.returncode, "", self.stderr)


SHELL = {"PATH": "/usr/bin:/bin", "HOME": "/Users/u", "SHOP_KEY": SECRET, "TERM": "xterm"}


def test_macos_runs_osascript_with_an_explicit_environment():
    runner = FakeRunner()
    outcome = show("croft: p", 'a "b"', platform="darwin", environ=SHELL, runner=runner)
    assert outcome.via == "osascript" and outcome.error is None
    [(command, options)] = runner.calls
    assert command == ["/usr/bin/osascript", "-e", 'display notification "a \\"b\\"" with title "croft: p"']
    assert options["env"] == {"PATH": "/usr/bin:/bin", "HOME": "/Users/u", "LANG": "en_US.UTF-8"}
    assert options["timeout"] == 10 and options["stdin"] == subprocess.DEVNULL


def test_osascript_failing_is_reported_with_its_exit_status_and_first_stderr_line():
    runner = FakeRunner(1, "\n0:42: execution error: Not authorized to send Apple events. (-1743)\nmore\n")
    outcome = show("t", "b", platform="darwin", environ=SHELL, runner=runner)
    assert (
        outcome.error
        == "desktop: osascript exited 1: 0:42: execution error: Not authorized to send Apple events. (-1743)"
    )


def test_a_runner_that_throws_is_reported_never_raised():
    outcome = show(
        "t", "b", platform="darwin", environ=SHELL, runner=FakeRunner(raises=PermissionError("forbidden"))
    )
    assert outcome.error == "desktop: osascript could not be started: PermissionError: forbidden"


def test_linux_without_notify_send_is_reported(tmp_path):
    outcome = show("t", "b", platform="linux", environ={"PATH": str(tmp_path)})  # a real, empty PATH
    assert outcome.error == "desktop: notify-send is not installed (install libnotify-bin or libnotify)"


def test_linux_passes_the_session_variables_and_nothing_else():
    runner = FakeRunner()
    environ = {**SHELL, "DISPLAY": ":0", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"}
    show("t", "b", platform="linux", environ=environ, runner=runner)
    [(command, options)] = runner.calls
    assert command[1:] == ["-a", "croft", "--", "t", "b"]
    assert options["env"] == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/Users/u",
        "LANG": "C.UTF-8",
        "DISPLAY": ":0",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus",
    }


def test_an_unsupported_platform_without_plyer_is_reported():
    assert show("t", "b", platform="sunos5", environ=SHELL).error == (
        "desktop notifications are not supported on sunos5"
    )


def test_a_failed_show_becomes_one_log_line_naming_the_run(make_project, monkeypatch, tmp_path):
    monkeypatch.delenv("CROFT_NOTIFY_DRY")
    monkeypatch.setenv("PATH", str(tmp_path))  # no notify-send to be found
    root = make_project({".env": f"SHOP_KEY={SECRET}\n"})
    notify_scheduled_failure(load_project(root), "r_1", [Failed("orders", {"code": "X", "message": SECRET})])
    [line] = (root / ".croft/logs/notify.log").read_text().splitlines()
    assert line.endswith("r_1 desktop: notify-send is not installed (install libnotify-bin or libnotify)")


def test_desktop_false_turns_it_off(make_project):
    root = make_project(notify={"desktop": False})
    notify_scheduled_failure(load_project(root), "r_1", [Failed("orders")])
    assert not (root / ".croft/logs/notifications.ndjson").exists()
    assert not (root / ".croft/logs/notify.log").exists()
    other = make_project(root=root.parent / "other")
    notify_scheduled_failure(load_project(other), "r_1", [Failed("orders")])
    records = [json.loads(x) for x in (other / ".croft/logs/notifications.ndjson").read_text().splitlines()]
    assert [(r["kind"], r["status"], r["body"]) for r in records] == [
        ("desktop", "dry", "orders failed in a scheduled run. See it with: croft logs orders --failed")
    ]


def test_a_crashed_scheduled_run_found_by_reconcile_is_notified_and_a_crashed_manual_one_is_not(make_project):
    from croft.core.identity import ProcessIdentity
    from croft.core.problems import problem
    from croft.history import runs
    from croft.history.db import open_history
    from croft.notify.send import notify_crashed_runs

    root = make_project()
    project = load_project(root)
    conn = open_history(project.config.state_dir)
    dead = ProcessIdentity(pid=999_999, start="0", boot="x")
    for run_id, trigger in (("r_sched", "schedule"), ("r_hand", "manual")):
        runs.create_run(conn, run_id=run_id, trigger=trigger, human=trigger == "manual", argv=[], who=dead)
        runs.start_step(
            conn, run_id=run_id, asset="orders", attempt=1, reason="due", code_hash=None, log_path=None
        )
        runs.mark_crashed(
            conn, run_id, problem("RUN_CRASHED", f"run {run_id} ended without finishing", "run it again")
        )
    notify_crashed_runs(project, conn, ["r_sched", "r_hand", "r_gone"])
    conn.close()
    records = [json.loads(x) for x in (root / ".croft/logs/notifications.ndjson").read_text().splitlines()]
    assert [(r["runId"], r["body"]) for r in records] == [
        (
            "r_sched",
            "orders failed in a scheduled run: RUN_CRASHED: run r_sched ended without finishing."
            " See it with: croft logs orders --failed",
        )
    ]


def test_a_failed_start_counts_in_the_streak_and_takes_the_ticks_problem_and_connection(make_project):
    from croft.core.problems import problem
    from croft.history.db import open_history
    from croft.notify.send import notify_failed_start

    root = make_project()
    project = load_project(root)
    why = problem(
        "RUN_CRASHED",
        "the scheduled run r_x did not start orders: its process ended before it recorded the run",
        "croft logs --runs shows the scheduled runs",
    )
    conn = open_history(project.config.state_dir)
    notify_failed_start(project, "r_x", ["orders"], why, conn=conn)
    notify_failed_start(project, "r_y", ["orders"], why, conn=conn)  # the same streak: quiet
    notify_failed_start(project, "r_z", ["orders"], object())  # type: ignore[arg-type]  # logged, not raised
    conn.close()
    records = [json.loads(x) for x in (root / ".croft/logs/notifications.ndjson").read_text().splitlines()]
    assert [r["body"] for r in records] == [
        "orders failed in a scheduled run: RUN_CRASHED: the scheduled run r_x did not start orders: its process"
        " ended before it recorded the run. See it with: croft logs orders --failed"
    ]
    assert "r_z notify: AttributeError" in (root / ".croft/logs/notify.log").read_text()
