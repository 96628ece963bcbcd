"""One per-user ticker: the OS job's `croft tick --all` and `croft serve` (whose minutes are that same
command, started as processes of its own) take the same decisions on the same registry: a project gone
for a week is pruned and told again, a gone one is told once, the projects' dead-man's-switch pings go
out from the minute itself (an idle minute pings without a project tick), in the same words in the tick
log. Real processes, a real HTTP server for the pings, the clock fixed by CROFT_NOW."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from httpserver import TestServer
from schedulekit import scheduled
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.scheduler.user import tick_all as usertick
from croft.scheduler.user.gate import gate
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.servenote import NOTE, write_serve
from croft.scheduler.user.wakefile import SERVE_NOTE

pytestmark = pytest.mark.processes

NOW = "2026-03-01T12:00:00Z"
WEEK_LATER = "2026-03-08T12:00:00Z"


def _story(base: Path, ping: str) -> Path:
    """A croft home under ``base`` whose registry lists a project with a ping and one whose croft.json
    is gone; returns the home."""
    home = base / "home"
    home.mkdir(parents=True, mode=0o700)
    shop = scheduled(base / "shop", "on")
    (shop / "croft.json").write_text(json.dumps({"timezone": "UTC", "notify": {"ping": ping}}))
    gone = scheduled(base / "gone", "on")
    (gone / "croft.json").unlink()
    for root in (shop, gone):
        Registry(home).add(root, "os-job", parse_instant(NOW))
    return home


def _env(home: Path, at: str) -> dict[str, str]:
    return os.environ | {"CROFT_HOME": str(home), "CROFT_NOW": at, "CROFT_SERVE_INTERVAL_MS": "300"}


def _tick_all(home: Path, at: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "croft", "tick", "--all"], env=_env(home, at), capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def _serve_until(home: Path, at: str, enough: object) -> int:
    """Run `croft serve` until ``enough()`` holds; the number of minutes it started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "croft", "serve", "--json"],
        env=_env(home, at),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for(enough, lambda: "croft serve's minutes; log: " + _log(home))  # type: ignore[arg-type]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    return int(json.loads(out)["data"]["started"])


def _log(home: Path) -> str:
    log = home / "logs" / "tick.log"
    return log.read_text() if log.exists() else "(none)"


def _decisions(home: Path, base: Path) -> set[str]:
    """The tick log's lines about the projects, without their instant, pids and durations, with the
    side's folder as <base>; serve's own lines (it starts, it stops) left out."""
    found = set()
    for line in _log(home).splitlines():
        message = line.split(" ", 1)[1]
        if message.startswith("croft serve (pid "):
            continue
        message = re.sub(r"\(pid \d+", "(pid N", message.replace(str(base), "<base>"))
        found.add(re.sub(r"\(\d+ ms\)", "(N ms)", message))
    return found


def _told(base: Path) -> list[tuple[str, str]]:
    """What the gone project's notifications said, and when, with the side's folder as <base>."""
    told = (base / "gone" / ".croft" / "logs" / "notifications.ndjson").read_text().splitlines()
    return [(n["at"], n["body"].replace(str(base), "<base>")) for n in map(json.loads, told)]


def test_serve_and_tick_all_take_the_same_decisions_on_the_same_registry(
    tmp_path: Path, server: TestServer
) -> None:
    server.route("GET", "/job", server.reply(200, "ok"))
    server.route("GET", "/serve", server.reply(200, "ok"))
    job, served = tmp_path / "job", tmp_path / "serve"
    job_home, serve_home = _story(job, server.url("/job")), _story(served, server.url("/serve"))

    for at in (NOW, NOW, WEEK_LATER, WEEK_LATER):  # the OS job: two minutes now, two a week later
        _tick_all(job_home, at)
    assert len(server.requests_to("/job")) == 4  # every minute pinged: a full tick's and an idle one's

    def pinged(count: int) -> object:
        return lambda: len(server.requests_to("/serve")) >= count

    first = _serve_until(serve_home, NOW, pinged(2))
    dropped = f"removed {served / 'gone'} from the schedule"
    assert dropped not in _log(serve_home)  # not quite a week yet
    later = _serve_until(
        serve_home,
        WEEK_LATER,
        lambda: len(server.requests_to("/serve")) >= 4 and dropped in _log(serve_home),
    )
    assert first >= 2 and later >= 2

    for home in (job_home, serve_home):
        assert [Path(e.root).name for e in Registry(home).entries()] == ["shop"]  # the gone one pruned
    told = _told(job)
    assert told == _told(served) and len(told) == 2  # when it went, and when it was dropped
    assert all("PROJECT_GONE" in body for _, body in told) and "taken off the schedule" in told[1][1]
    decisions = _decisions(job_home, job)
    assert decisions == _decisions(serve_home, served)
    assert {
        "gone: not ticked: PROJECT_GONE: gone, its folder or croft.json is gone; it ticks again once it is back",
        "shop: tick started (pid N, in the per-user tick)",
    } <= decisions
    assert any(d.startswith("removed <base>/gone from the schedule: gone since") for d in decisions)
    # an idle minute pinged without a project tick: fewer ticks started than pings sent, on either side
    for home, path in ((job_home, "/job"), (serve_home, "/serve")):
        assert _log(home).count("shop: tick started") < len(server.requests_to(path))


def test_a_serve_coming_or_going_wakes_the_gate(
    tmp_path: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which projects are the minute's depends on whether a croft serve is alive, so serve.json is in the
    wake file's stamps: a serve that starts gets its --no-os-job projects ticked the very next minute,
    never a gate settling it for the OS-job ones alone."""
    assert SERVE_NOTE == NOTE
    job = scheduled(tmp_path / "job", "off")
    mine = scheduled(tmp_path / "mine", "on", via="serve")
    Registry().add(job, "os-job", parse_instant(NOW))
    Registry().add(mine, "serve", parse_instant(NOW))
    old = 1_700_000_000_000_000_000  # stamps well in the past: trusted (not racy)
    for path in [*tmp_path.rglob("*"), _croft_home / "projects.json"]:
        os.utime(path, ns=(old, old))
    monkeypatch.setenv("CROFT_NOW", NOW)
    first = usertick.tick_all()
    assert first["started"] == [] and {s["reason"] for s in first["skipped"]} == {
        "scheduling is off",
        "ticks from croft serve",
    }
    assert gate(str(_croft_home)) == ""  # nothing moved: the next minute is settled
    assert usertick.tick_all()["started"] == []  # a full minute again: its wake file stamps the beat file
    write_serve(_croft_home)  # a croft serve (this process) is alive now
    assert gate(str(_croft_home)) is None
    assert [s["root"] for s in usertick.tick_all()["started"]] == [str(mine)]
