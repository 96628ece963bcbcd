"""A minute that owes only its idle projects' dead-man's-switch pings is settled by the minute gate: the
OS job's own command (``python -S -P croft/cli/minute.py``) beats, sends the pings the last full minute
wrote in the wake file (``user.pingbeat``) and ends, with no full tick. A miss is the same redacted line in
notify.log the full tick writes; a changed file still hands the minute to the full tick. Real processes,
a real HTTP server, the clock fixed by CROFT_NOW."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from httpserver import TestServer
from schedulekit import scheduled

from croft.core.clock import parse_instant
from croft.scheduler import heartbeat
from croft.scheduler.jobs.spec import job_spec
from croft.scheduler.user import gate, wakefile
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes

MINUTES = [f"2026-03-01T12:{m:02d}:00Z" for m in range(60)]


def _home(home: Path, base: Path, ping: str, env_file: str = "") -> Path:
    """``home``'s registry lists one project, scheduling on, with ``ping`` as its ``notify.ping`` (and
    ``env_file`` as its .env); the project."""
    root = scheduled(base / "shop", "on")
    (root / "croft.json").write_text(json.dumps({"timezone": "UTC", "notify": {"ping": ping}}))
    if env_file:
        (root / ".env").write_text(env_file)
        os.chmod(root / ".env", 0o600)
    Registry(home).add(root, "os-job", parse_instant(MINUTES[0]))
    old = 1_700_000_000_000_000_000  # what the minutes read, older than a racy stamp
    for path in [*root.rglob("*"), root, home / "projects.json"]:
        os.utime(path, ns=(old, old))
    return root


def _minute(home: Path, at: str) -> subprocess.CompletedProcess[str]:
    """The OS job's own command (``croft schedule on`` writes it) at ``at``."""
    done = subprocess.run(
        job_spec(sys.executable).argv(),
        env=os.environ | {"CROFT_HOME": str(home), "CROFT_NOW": at},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def _until_gated(home: Path) -> int:
    """Minutes until one is the gate's (the wake file left as it was): the first ticks the project and
    leaves its idle memo, the next ones beat it until a full minute's wake file holds; the index of the
    next minute."""
    for i in range(1, 8):
        before = _wake(home) if (home / gate.FILE).exists() else None
        _minute(home, MINUTES[i])
        if before is not None and _wake(home) == before:
            return i + 1
    raise AssertionError("no minute the gate settled after seven minutes")


def _wake(home: Path) -> tuple[int, int, bytes]:
    """The wake file as a full minute leaves it: a settled minute never writes it."""
    st = os.stat(home / gate.FILE)
    return st.st_ino, st.st_mtime_ns, (home / gate.FILE).read_bytes()


def _misses(root: Path) -> list[str]:
    """notify.log's lines, without their instant."""
    log = root / ".croft" / "logs" / "notify.log"
    return [line.split(" ", 1)[1] for line in log.read_text().splitlines()] if log.exists() else []


def test_a_minute_that_owes_only_pings_is_settled_by_the_gate_and_the_ping_arrives(
    tmp_path: Path, server: TestServer, _croft_home: Path
) -> None:
    home = _croft_home
    server.route("GET", "/ping/s3cret", server.reply(200, "ok"))
    root = _home(home, tmp_path, server.url("/ping/s3cret"))
    i = _until_gated(home)
    assert len(server.requests_to("/ping/s3cret")) == i - 1  # every minute pinged, full or the gate's
    wake = _wake(home)
    assert wakefile.settles(str(home)) and b"s3cret" in wake[2]
    assert os.stat(home / gate.FILE).st_mode & 0o777 == 0o600
    log = (home / "logs" / "tick.log").read_text()

    for at in MINUTES[i : i + 2]:  # the gate's minutes: a heartbeat and the ping, nothing else
        done = _minute(home, at)
        assert (done.stdout, done.stderr) == ("", "")
        assert heartbeat.last_heartbeat(root / ".croft") == at.replace("Z", ".000Z")
    assert len(server.requests_to("/ping/s3cret")) == i + 1
    assert _wake(home) == wake  # no full tick rewrote it
    assert (home / "logs" / "tick.log").read_text() == log
    assert _misses(root) == []

    # croft.json edited: the next minute is the full tick's, which reads the new ping
    server.route("GET", "/ping/other", server.reply(200, "ok"))
    (root / "croft.json").write_text(
        json.dumps({"timezone": "UTC", "notify": {"ping": server.url("/ping/other")}})
    )
    _minute(home, MINUTES[i + 2])
    assert _wake(home) != wake
    assert len(server.requests_to("/ping/other")) == 1
    assert len(server.requests_to("/ping/s3cret")) == i + 1
    assert heartbeat.last_heartbeat(root / ".croft") == MINUTES[i + 2].replace("Z", ".000Z")


def test_a_ping_the_gate_owes_that_fails_is_one_redacted_line_as_the_full_tick_writes_it(
    tmp_path: Path, server: TestServer, _croft_home: Path
) -> None:
    home = _croft_home
    server.route("GET", "/ping/s3cret", server.reply(503, "down"))
    root = _home(home, tmp_path, server.url("/ping/s3cret"), f"PING_PORT={server.port}\n")
    i = _until_gated(home)  # the full minutes, then the gate's: each misses its ping
    assert len(server.requests_to("/ping/s3cret")) == i - 1
    wake = _wake(home)
    _minute(home, MINUTES[i])  # one more of the gate's
    assert _wake(home) == wake
    assert heartbeat.last_heartbeat(root / ".croft") == MINUTES[i].replace("Z", ".000Z")
    assert len(server.requests_to("/ping/s3cret")) == i
    assert _misses(root) == ["- ping 127.0.0.1:[redacted:PING_PORT]: HTTP 503"] * i  # the same words
