"""``croft serve`` in a container: what it does shows on its standard output (``docker logs``), line for line
as the tick log has it: its own lines and those of the real project ticks it starts. With ``--json`` the
lines go to standard error and standard output stays the one envelope. The lines of a project tick are
written by the worker its minute handed it to, as the OS job's minute has them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from schedulekit import scheduled
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.serve import LogFollower

NOW = "2026-03-01T12:00:00Z"


def test_the_follower_reads_new_whole_lines_and_follows_a_rotation(tmp_path: Path) -> None:
    log = tmp_path / "tick.log"
    log.write_text("old line\n")
    follower = LogFollower(str(log))
    assert follower.lines() == []  # what was there before is not repeated
    with log.open("a") as out:
        out.write("one\ntwo \x1b[2J\nhalf")
    assert follower.lines() == ["one", "two \x1b[2J"]
    with log.open("a") as out:
        out.write(" line\n")
    assert follower.lines() == ["half line"]
    log.replace(tmp_path / "tick.log.1")  # rotated: a new file starts
    log.write_text("fresh\n")
    assert follower.lines() == ["fresh"]


def serve(home: Path, *args: str) -> tuple[subprocess.Popen[str], list[str], threading.Thread]:
    env = os.environ | {"CROFT_SERVE_INTERVAL_MS": "300", "CROFT_HOME": str(home), "CROFT_NOW": NOW}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "croft", "serve", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    stream = proc.stderr if "--json" in args else proc.stdout
    assert stream is not None

    def read() -> None:
        for line in stream:
            seen.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return proc, seen, reader


@pytest.mark.processes
@pytest.mark.parametrize("as_json", [False, True])
def test_croft_serve_prints_each_ticks_lines_as_the_tick_log_has_them(
    tmp_path: Path, _croft_home: Path, as_json: bool
) -> None:
    project = scheduled(tmp_path / "shop", "on", via="serve")
    Registry().add(project, "serve", parse_instant(NOW))
    proc, seen, reader = serve(_croft_home, *(["--json"] if as_json else []))
    try:
        wait_for(
            lambda: (
                any("shop: tick started" in line for line in seen)
                and any(line.split(" ", 1)[-1].startswith("shop: tick:") for line in seen)
            ),
            lambda: f"serve's own lines and a project tick's; printed: {seen}",
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(timeout=10)  # the reader alone reads the stream it follows, to its end
    other = proc.stdout if as_json else proc.stderr
    assert other is not None
    out = other.read()
    for stream in (proc.stdout, proc.stderr):
        assert stream is not None
        stream.close()
    assert proc.returncode == 0
    logged = (_croft_home / "logs" / "tick.log").read_text().splitlines()
    banner_and_summary = ("croft serve: ticking", "croft serve stopped after")
    printed = [line for line in seen if not line.startswith(banner_and_summary)]
    assert printed and set(printed) <= set(logged), (printed, logged)
    assert any(line.endswith(f"croft serve (pid {proc.pid}): stops") for line in printed)
    if as_json:
        envelope = json.loads(out)  # standard output is the one envelope
        assert envelope["ok"] and envelope["data"]["started"] >= 1
    else:
        assert out.startswith("croft serve: ticking")  # standard error: the banner alone
