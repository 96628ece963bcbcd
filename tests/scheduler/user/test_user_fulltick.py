"""``croft tick --all``'s full ticks: a few workers for many projects, a hung project left to finish on
its own, and a minute whose previous ``tick --all`` is still at work skipped with a line."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from schedulekit import query, scheduled, setting
from waiting import wait_for

from croft.core import children
from croft.core.clock import parse_instant
from croft.scheduler.user import fulltick
from croft.scheduler.user import tick_all as usertick
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes

NOW = "2026-03-01T12:00:00Z"
STAMP = "2026-03-01T12:00:00.000Z"


def test_many_projects_without_a_memo_are_ticked_by_two_workers(
    tmp_path: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROFT_NOW", NOW)
    roots = [scheduled(tmp_path / f"p{i:02d}", "on") for i in range(12)]
    for root in roots:
        Registry().add(root, "os-job", parse_instant(NOW))
    result = usertick.tick_all()
    assert sorted(s["root"] for s in result["started"]) == sorted(map(str, roots))
    assert len({s["pid"] for s in result["started"]}) <= fulltick.WORKERS  # never a process per project
    for root in roots:  # each was ticked for real: its own heartbeat, and the memo of an idle tick
        assert query(root, "SELECT heartbeat_at FROM tick") == [{"heartbeat_at": STAMP}]
        assert setting(root, "schedule.idle")["at"] == STAMP
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert all(f"{root.name}: tick started (pid " in log for root in roots)  # each by its folder's name
    again = usertick.tick_all()  # every memo holds now: all beaten in-process, nothing started
    assert again["started"] == [] and len(again["beat"]) == 12


def test_a_project_tick_that_hangs_is_left_and_the_others_are_ticked(
    tmp_path: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose project never answers gets no more projects; the rest go to a new worker."""
    record = tmp_path / "record"
    record.mkdir()
    script = tmp_path / "bin" / "python"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        "while IFS= read -r line; do\n"
        """  root=$(printf '%s' "$line" | sed -e 's/^{"root": "//' -e 's/", "name": .*//')\n"""
        '  case "$(basename "$root")" in stuck) sleep 30;; esac\n'
        f'  touch "{record}/$(basename "$root")"\n'
        """  printf '{"root": "%s", "exited": null, "ping": null, "error": null}\\n' "$root"\n"""
        "done\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(children.sys, "executable", str(script))
    monkeypatch.setattr(fulltick, "ANSWER_WITHIN_S", 1.0)
    monkeypatch.setenv("CROFT_NOW", NOW)
    names = ["a", "stuck", "c", "d", "e"]
    for name in names:
        Registry().add(scheduled(tmp_path / name, "on"), "os-job", parse_instant(NOW))
    result = usertick.tick_all()
    assert sorted(p.name for p in record.iterdir()) == ["a", "c", "d", "e"]
    assert "stuck: tick not finished: no answer within 1 s; left to finish" in result["notes"]


def test_a_minute_whose_previous_tick_all_is_still_at_work_is_skipped(
    tmp_path: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROFT_NOW", NOW)
    root = scheduled(tmp_path / "p", "on")
    Registry().add(root, "os-job", parse_instant(NOW))
    code = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600);"
        "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(_croft_home / "tick-all.lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        skipped = usertick.tick_all()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
    assert skipped["exited"] == "busy" and skipped["started"] == [] and skipped["beat"] == []
    line = "the previous croft tick --all is still at work; this minute is left to it"
    assert line in skipped["notes"] and line in (_croft_home / "logs" / "tick.log").read_text()
    assert query(root, "SELECT heartbeat_at FROM tick") == []  # nothing of the minute was done twice
    ticked = usertick.tick_all()  # the holder is gone (the kernel dropped its lock): this one works
    assert "exited" not in ticked and [s["root"] for s in ticked["started"]] == [str(root)]


def test_two_overlapping_tick_all_processes_never_tick_the_same_minute_twice(
    tmp_path: Path, _croft_home: Path
) -> None:
    """Real processes: the first is still at work (one project's history is locked by someone else, so
    its tick waits); the second, started meanwhile, skips the minute; the first then ticks every project."""
    import json
    import sqlite3

    from schedulekit import env_at

    roots = [scheduled(tmp_path / f"q{i}", "on") for i in range(4)]
    for root in roots:
        Registry().add(root, "os-job", parse_instant(NOW))
    blocker = sqlite3.connect(roots[0] / ".croft" / "runs.sqlite", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # q0's tick waits for this write lock (up to its busy timeout)
    command = [sys.executable, "-m", "croft", "tick", "--all", "--json"]
    log = _croft_home / "logs" / "tick.log"
    try:
        first = subprocess.Popen(command, env=env_at(NOW), stdout=subprocess.PIPE, text=True)
        wait_for(
            lambda: log.is_file() and f"{roots[0].name}: tick started" in log.read_text(),
            "q0's tick to start",
        )
        second = subprocess.run(command, env=env_at(NOW), capture_output=True, text=True, timeout=60)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    out, _ = first.communicate(timeout=120)
    skipped, done = json.loads(second.stdout)["data"], json.loads(out)["data"]
    assert skipped["exited"] == "busy" and skipped["started"] == [] and skipped["beat"] == []
    assert sorted(s["root"] for s in done["started"]) == sorted(map(str, roots))
    assert log.read_text().count(f"{roots[1].name}: tick started") == 1  # once, by the first
    for root in roots[1:]:
        assert query(root, "SELECT heartbeat_at FROM tick") == [{"heartbeat_at": STAMP}]
