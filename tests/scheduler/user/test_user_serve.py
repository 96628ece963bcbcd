"""croft serve (interval, no overlap, survives failures, SIGTERM) and croft doctor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
from schedulekit import scheduled
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.scheduler import heartbeat
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.serve import Server

pytestmark = pytest.mark.processes

NOW = "2026-03-01T12:00:00Z"


def test_server_skips_a_project_while_its_previous_tick_lives(tmp_path: Path, _croft_home: Path) -> None:
    on = scheduled(tmp_path / "on", "on", via="serve")
    off = scheduled(tmp_path / "off", "off")
    osjob = scheduled(tmp_path / "osjob", "on")
    reg = Registry()
    reg.add(on, "serve", parse_instant(NOW))
    reg.add(off, "serve", parse_instant(NOW))
    reg.add(osjob, "os-job", parse_instant(NOW))
    started: list[subprocess.Popen[bytes]] = []

    def slow(root: str, log: IO[bytes], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(["sleep", "0.6"], stdout=log, stderr=subprocess.STDOUT)
        started.append(child)
        return child

    server = Server(spawn=slow)
    first = server.tick_once()
    assert {Path(e["root"]).name: e["action"] for e in first} == {"on": "started", "off": "off"}
    assert server.tick_once()[0]["action"] == "previous_alive"
    started[0].wait()
    assert server.tick_once()[0]["action"] == "started"
    started[-1].wait()
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert ": on: previous tick (pid" in log and "still running; skipped" in log  # named by its folder


def test_a_failing_round_is_logged_and_the_next_one_runs(tmp_path: Path, _croft_home: Path) -> None:
    reg = Registry()
    reg.add(scheduled(tmp_path / "on", "on", via="serve"), "serve", parse_instant(NOW))

    def broken(root: str, log: IO[bytes], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
        raise RuntimeError("boom")

    server = Server(spawn=broken)
    assert server.tick_once()[0]["action"] == "failed: boom"
    (_croft_home / "projects.json").write_text("[{")  # even an unreadable registry
    assert server.tick_once()[0]["action"].startswith("failed: ")
    assert "tick failed: RuntimeError: boom" in (_croft_home / "logs" / "tick.log").read_text()


def test_croft_serve_ticks_at_start_and_each_interval_and_exits_0_on_sigterm(
    tmp_path: Path, _croft_home: Path
) -> None:
    project = scheduled(tmp_path / "with space", "on", via="serve")
    Registry().add(project, "serve", parse_instant(NOW))
    env = os.environ | {"CROFT_SERVE_INTERVAL_MS": "400"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "croft", "serve", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = _croft_home / "logs" / "tick.log"

    def three_rounds() -> bool:
        text = log.read_text() if log.exists() else ""
        ticked = heartbeat.last_heartbeat(project / ".croft") is not None  # a real project tick beat
        return (
            text.count(f"{project.name}: tick started") + text.count("still running; skipped") >= 3 and ticked
        )

    def logged() -> str:
        return log.read_text() if log.exists() else "(none)"

    try:
        wait_for(
            three_rounds, lambda: "three rounds of croft serve and a real tick's heartbeat; log: " + logged()
        )
        assert heartbeat.last_heartbeat(project / ".croft") is not None, log.read_text()
        assert (_croft_home / "serve.json").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    envelope = json.loads(out)
    assert envelope["ok"] and envelope["data"]["intervalMs"] == 400 and envelope["data"]["ticks"] >= 3
    text = log.read_text()
    own = [line for line in text.splitlines() if f"croft serve (pid {proc.pid})" in line]
    # serve's own last word is "stops"; a detached project tick it started may still append after it
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
    from croft.scheduler.user.serve import Server, serve_alive, serve_path

    server = Server(_croft_home, spawn=lambda *a: (_ for _ in ()).throw(AssertionError("no project to tick")))
    server.noted = True  # as serve() sets it once it has written the note
    serve_path(_croft_home).write_bytes(damage)
    assert not serve_alive(_croft_home)
    server.tick_once()
    assert serve_alive(_croft_home)
