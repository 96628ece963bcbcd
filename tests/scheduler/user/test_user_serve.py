"""croft serve (interval, no overlap, survives failures, SIGTERM) and croft doctor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from schedulekit import scheduled
from waiting import wait_for

from croft.core import children
from croft.core.clock import parse_instant
from croft.scheduler import heartbeat
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.serve import Server, minute_argv, next_boundary

pytestmark = pytest.mark.processes

NOW = "2026-03-01T12:00:00Z"


def test_a_minute_whose_previous_one_is_still_at_work_is_left_to_it(_croft_home: Path) -> None:
    """serve never runs two minutes at once: while the croft tick --all it started last is alive, the next
    minute starts nothing and says so; once it ended, the next minute starts."""
    server = Server(_croft_home)
    busy = subprocess.Popen(["sleep", "30"])
    try:
        server.child = busy
        assert server.minute() == "previous_alive" and server.child is busy and server.started == 0
    finally:
        busy.kill()
        busy.wait()
    assert server.minute() == "started" and server.child is not busy
    assert server.child is not None and server.child.wait(timeout=60) == 0  # an empty registry: at once
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert f"the previous minute (pid {busy.pid}) is still at work; this one is left to it" in log
    assert server.ticks == 2 and server.started == 1


def test_a_minute_is_the_os_jobs_command_as_a_process_of_its_own(
    _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What serve starts each minute is `croft tick --all` with this interpreter (a fresh process: an
    upgraded croft is the next minute's), in croft's home, its output appended to the tick log; a minute
    that cannot start is a line, and the next one tries again."""
    assert minute_argv() == [sys.executable, "-P", "-m", "croft", "tick", "--all"]
    server = Server(_croft_home)
    monkeypatch.setattr(children.sys, "executable", str(_croft_home / "no-python"))
    assert server.minute() == "spawn_failed" and server.child is None
    assert "could not start this minute: " in (_croft_home / "logs" / "tick.log").read_text()
    monkeypatch.undo()
    (_croft_home / "projects.json").write_text("[{")  # a registry the minute cannot read: its own line
    assert server.minute() == "started"
    assert server.child is not None and server.child.wait(timeout=60) != 0
    assert "tick failed: " in (_croft_home / "logs" / "tick.log").read_text()


@pytest.mark.parametrize(
    ("now_ms", "every_ms", "boundary_ms"),
    [(90_500, 60_000, 120_000), (120_000, 60_000, 180_000), (1200, 400, 1600)],
)
def test_the_next_minute_starts_at_the_next_boundary_of_the_wall_clock(
    now_ms: int, every_ms: int, boundary_ms: int
) -> None:
    assert next_boundary(now_ms * 1_000_000, every_ms) == boundary_ms * 1_000_000


def test_croft_serve_ticks_at_start_and_each_interval_and_exits_0_on_sigterm(
    tmp_path: Path, _croft_home: Path
) -> None:
    project = scheduled(tmp_path / "with space", "on", via="serve")
    Registry().add(project, "serve", parse_instant(NOW))
    env = os.environ | {"CROFT_SERVE_INTERVAL_MS": "400", "CROFT_NOW": NOW}
    proc = subprocess.Popen(
        [sys.executable, "-m", "croft", "serve", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = _croft_home / "logs" / "tick.log"

    def beaten_later() -> bool:
        """A real project tick beat, and a later minute beat the project in-process (its idle check held)."""
        beats = _croft_home / "idle-beats.json"
        ticked = heartbeat.last_heartbeat(project / ".croft") is not None
        return ticked and beats.exists() and str(project) in json.loads(beats.read_text())["roots"]

    def logged() -> str:
        return log.read_text() if log.exists() else "(none)"

    try:
        wait_for(beaten_later, lambda: "a real tick's heartbeat, then an idle minute's; log: " + logged())
        assert (_croft_home / "serve.json").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    envelope = json.loads(out)
    assert envelope["ok"] and envelope["data"]["intervalMs"] == 400 and envelope["data"]["ticks"] >= 2
    text = log.read_text()
    assert text.count(f"{project.name}: tick started") == 1  # the first minute; the others beat in-process
    own = [line for line in text.splitlines() if f"croft serve (pid {proc.pid})" in line]
    # serve's own last word is "stops"; a minute it started may still append after it
    assert own[0].endswith("starts, ticking every 0.4 s") and own[-1].endswith("stops")
    assert not (_croft_home / "serve.json").exists()


@pytest.mark.parametrize("bad", ["soon", "0", "10", "99", "-5"])
def test_serve_interval_knob_must_be_a_number_in_its_range(bad: str) -> None:
    """0 used to become 10 ms (a hundred project ticks a second); every value outside the knob's range is
    an error naming the variable, before serve starts anything."""
    done = subprocess.run(
        [sys.executable, "-m", "croft", "serve", "--json"],
        env=os.environ | {"CROFT_SERVE_INTERVAL_MS": bad},
        capture_output=True,
        text=True,
        timeout=30,
    )
    problem = json.loads(done.stdout)["problems"][0]
    assert done.returncode == 2 and problem["code"] == "KNOB_INVALID", done.stdout
    assert "CROFT_SERVE_INTERVAL_MS" in problem["message"] and "100 to 86400000" in problem["hint"]


def test_doctor_lines_for_a_broken_chain(
    tmp_path: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from croft.cli.group import build_group
    from croft.scheduler.jobs import record as jobrecord

    monkeypatch.setenv("CROFT_NOW", NOW)
    project = scheduled(tmp_path / "p", "on")
    serve_project = scheduled(tmp_path / "s", "on", via="serve")
    Registry().add(project, "os-job", parse_instant(NOW))
    Registry().add(serve_project, "serve", parse_instant(NOW))
    out = CliRunner().invoke(build_group(), ["doctor", "--json"])
    assert out.exit_code == 1
    checks = {c["check"]: c for c in json.loads(out.output)["data"]["checks"]}
    assert checks["registry"]["ok"]
    assert not checks["OS job"]["ok"] and checks["OS job"]["fix"] == "croft schedule on"
    assert not checks["croft serve"]["ok"] and checks["croft serve"]["fix"] == "croft serve"
    assert not checks[f"project {project}"]["ok"]  # on since 11:00, never ticked: stale
    jobrecord.write({"backend": "crontab", "label": "dev.croft.test", "python": sys.executable})
    human = CliRunner().invoke(build_group(), ["doctor"])
    assert "✖ OS job: the crontab job dev.croft.test is missing" in human.output
    assert "    fix: croft schedule on" in human.output


def test_doctor_interpreter_check_runs_it(tmp_path: Path) -> None:
    from croft.scheduler.jobs.spec import interpreter_imports_croft

    assert interpreter_imports_croft(sys.executable)[0] is True
    ok, why = interpreter_imports_croft("/usr/bin/false")
    assert not ok and "cannot import croft" in why
    ok, why = interpreter_imports_croft(str(tmp_path / "gone"))
    assert not ok and "does not run" in why


@pytest.mark.parametrize("damage", [b"", b"\x00garbage"], ids=["empty", "garbage"])
def test_a_running_serve_puts_back_its_note_when_it_is_lost(_croft_home: Path, damage: bytes) -> None:
    """serve.json says which croft serve is alive (doctor reads it): lost or garbled while serve runs, the
    next round writes it again, so doctor never says "none is running" about a serve that is."""
    from croft.scheduler.user.servenote import serve_alive, serve_path

    server = Server(_croft_home)
    server.noted = True  # as serve() sets it once it has written the note
    serve_path(_croft_home).write_bytes(damage)
    assert not serve_alive(_croft_home)
    assert server.minute() == "started"
    assert serve_alive(_croft_home)
    assert server.child is not None and server.child.wait(timeout=60) == 0
