"""A second real unix user on the machine tries the two ways around "the scheduler runs only this
user's code": a world-writable CROFT_HOME whose registry she replaces with one naming her project (code
she approved herself), and a crash-file folder she prepared in the shared temporary folder. Root's
``croft tick --all`` refuses, says why in the tick log, ``croft status`` and ``croft doctor`` (with a fix
that works), never runs her code, and keeps ticking root's own project.

She is a throwaway user (useradd, removed afterwards with all she left). Needs root; elsewhere the tests
skip saying so, and with CI=true they fail instead.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from schedulekit import env_at, wait_for_runs
from userkit import User, cannot, throwaway_user, why_not_root
from waiting import wait_for

from croft.core.clock import parse_instant
from croft.scheduler import heartbeat
from croft.scheduler.user.registry import Registry

T0 = "2026-06-01T09:30:00Z"
T1 = "2026-06-01T10:05:00Z"
MARKED = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    import os

    with open({marker!r}, "a") as out:
        out.write(f"ran as uid {{os.geteuid()}}\\n")
    yield [{{"id": 1}}]
"""


@pytest.fixture
def mallory() -> Iterator[User]:
    reason = why_not_root()
    if reason:
        cannot(reason)
    with throwaway_user("croft-mallory") as user:
        yield user


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder both users can reach (pytest's own temporary folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="croft-two-users-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def croft(root: Path, home: Path, now: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A real croft process as root (this test), with ``home`` as CROFT_HOME."""
    return subprocess.run(
        [sys.executable, "-m", "croft", *args],
        cwd=root,
        env=env_at(now, CROFT_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=120,
    )


def envelope(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        return json.loads(done.stdout)  # type: ignore[no-any-return]
    except ValueError:
        raise AssertionError(f"not one envelope: {done.stdout!r} {done.stderr!r}") from None


def project(root: Path, marker: Path, home: Path) -> Path:
    """An approved, hourly ingest (run by hand at T0), scheduling on for the OS job."""
    root.mkdir()
    (root / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    (root / "assets").mkdir()
    (root / "assets" / "rows.py").write_text(MARKED.format(marker=str(marker)))
    done = croft(root, home, T0, "run", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    marker.unlink()
    from croft.history.db import open_history
    from croft.scheduler.setting import write_scheduling

    conn = open_history(root / ".croft")
    try:
        write_scheduling(conn, "on", parse_instant(T0), via="os-job")
    finally:
        conn.close()
    return root


def ran(root: Path, marker: Path, home: Path) -> str:
    """What the asset wrote once a scheduled run of it ran (waited for: the tick's run is detached)."""
    wait_for(
        lambda: marker.exists() and marker.read_text().endswith("\n"),
        lambda: f"{marker.name}: a scheduled run; tick log: {(home / 'logs' / 'tick.log').read_text()}",
    )
    wait_for_runs(root)  # and its run to end before the folder goes
    return marker.read_text()


def as_user(user: User, script: str) -> None:
    done = user.run(["/bin/sh", "-c", script])
    assert done.returncode == 0, done.stderr


def checks(root: Path, home: Path) -> dict[str, dict[str, Any]]:
    done = croft(root, home, T1, "doctor", "--json")
    return {c["check"]: c for c in envelope(done)["data"]["checks"]}


def problem_of(done: subprocess.CompletedProcess[str], code: str) -> dict[str, Any]:
    (found,) = [p for p in envelope(done)["problems"] if p["code"] == code]
    return found  # type: ignore[no-any-return]


def test_her_registry_in_a_world_writable_croft_home_is_refused_and_mine_ticks_once_mended(
    mallory: User, shared: Path
) -> None:
    home = shared / "root's croft home"
    home.mkdir()
    home.chmod(0o777)  # the hole: anyone may write root's CROFT_HOME
    mine = project(shared / "mine", shared / "mine ran", home)
    theirs = project(shared / "hers", shared / "hers ran", home)  # approved (a run by hand) ...
    mallory.give(theirs)  # ... and hers: she owns every file of it, its approvals included
    Registry(home).add(mine, "os-job", parse_instant(T0))
    # she replaces root's registry with one naming her project
    listing = json.dumps([{"root": str(theirs), "addedAt": T0, "via": "os-job"}])
    as_user(
        mallory,
        f"printf %s {shlex.quote(listing)} > /tmp/$$.json && mv -f /tmp/$$.json {shlex.quote(str(home / 'projects.json'))}",
    )
    assert (home / "projects.json").stat().st_uid == mallory.uid

    before = sorted(p.name for p in home.iterdir())
    tick = croft(mine, home, T1, "tick", "--all", "--json")
    refused = problem_of(tick, "UNSAFE_PERMISSIONS")
    assert tick.returncode == 2 and refused["details"]["path"] == str(home)  # UNSAFE_PERMISSIONS exits 2
    assert "anyone on this machine can write it" in refused["message"]
    assert sorted(p.name for p in home.iterdir()) == before  # not a byte written into her reach
    # shown: doctor's permissions link and status's warning, in the same words, with the same fix
    link = checks(mine, home)["permissions"]
    status = croft(mine, home, T1, "status", "--json")
    warning = problem_of(status, "UNSAFE_PERMISSIONS")
    assert not link["ok"] and link["detail"] == warning["message"] and str(home) in link["detail"]
    assert link["fix"] == warning["fix"]["command"] == f"chmod go-w {shlex.quote(str(home))}"

    subprocess.run(["sh", "-c", link["fix"]], check=True)  # the fix, as written
    tick = croft(mine, home, T1, "tick", "--all", "--json")
    refused = problem_of(tick, "UNSAFE_PERMISSIONS")  # next: the registry is hers
    assert refused["details"]["path"] == str(home / "projects.json") and "another user" in refused["message"]
    subprocess.run(["sh", "-c", refused["fix"]["command"]], check=True)  # moved aside
    assert not (home / "projects.json").exists()

    Registry(home).add(mine, "os-job", parse_instant(T1))  # root puts its own project back
    tick = croft(mine, home, T1, "tick", "--all", "--json")
    assert tick.returncode == 0 and [s["root"] for s in envelope(tick)["data"]["started"]] == [str(mine)]
    assert ran(mine, shared / "mine ran", home) == "ran as uid 0\n"  # my due ingest ran, as me
    assert heartbeat.last_heartbeat(mine / ".croft") == "2026-06-01T10:05:00.000Z"
    assert not (shared / "hers ran").exists()  # her code never ran as root


def test_her_project_in_my_registry_is_skipped_logged_and_shown_and_mine_still_ticks(
    mallory: User, shared: Path
) -> None:
    home = shared / "home"
    home.mkdir(mode=0o700)
    mine = project(shared / "mine", shared / "mine ran", home)
    theirs = project(shared / "hers", shared / "hers ran", home)
    mallory.give(theirs)
    open_to_all = project(shared / "open", shared / "open ran", home)  # mine, but anyone may write .croft
    (open_to_all / ".croft").chmod(0o777)
    for root in (theirs, mine, open_to_all):
        Registry(home).add(root, "os-job", parse_instant(T0))

    tick = croft(mine, home, T1, "tick", "--all", "--json")
    assert tick.returncode == 0, tick.stdout + tick.stderr
    data = envelope(tick)["data"]
    assert [s["root"] for s in data["started"]] == [str(mine)]
    assert {s["root"]: s["path"] for s in data["skipped"]} == {
        str(theirs): str(theirs),
        str(open_to_all): str(open_to_all / ".croft"),
    }
    assert ran(mine, shared / "mine ran", home) == "ran as uid 0\n"
    assert not (shared / "hers ran").exists() and not (shared / "open ran").exists()
    logged = (home / "logs" / "tick.log").read_text()
    assert (
        f"{theirs.name}: not ticked, croft does not trust {theirs}: it belongs to another user (uid {mallory.uid})"
        in logged
    )
    assert f"{open_to_all.name}: not ticked, croft does not trust {open_to_all / '.croft'}: anyone" in logged

    found = checks(mine, home)
    hers, opened = found[f"project {theirs}"], found[f"project {open_to_all}"]
    assert not hers["ok"] and hers["fix"] == f"croft schedule off --project {theirs}"
    assert not opened["ok"] and opened["fix"] == f"chmod go-w {open_to_all / '.croft'}"
    assert found[f"project {mine}"]["ok"] and found["permissions"]["ok"]
    warning = problem_of(croft(open_to_all, home, T1, "status", "--json"), "UNSAFE_PERMISSIONS")
    assert warning["message"] == opened["detail"] and warning["fix"]["command"] == opened["fix"]

    # each fix works as written: hers comes off my schedule with nothing written into it
    history = theirs / ".croft" / "runs.sqlite"
    before = (history.read_bytes(), history.stat().st_mtime_ns, history.stat().st_uid)
    off = croft(mine, home, T1, *shlex.split(hers["fix"])[1:], "--json")
    assert off.returncode == 0, off.stdout + off.stderr
    assert (history.read_bytes(), history.stat().st_mtime_ns, history.stat().st_uid) == before
    subprocess.run(["sh", "-c", opened["fix"]], check=True)
    assert [e.root for e in Registry(home).entries()] == [str(mine), str(open_to_all)]
    tick = croft(mine, home, "2026-06-01T10:06:00Z", "tick", "--all", "--json")
    assert sorted(s["root"] for s in envelope(tick)["data"]["started"]) == sorted(
        [str(mine), str(open_to_all)]
    )
    assert ran(open_to_all, shared / "open ran", home) == "ran as uid 0\n"


def test_a_crash_folder_she_prepared_in_the_shared_temp_folder_is_never_used(
    mallory: User, shared: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = shared / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)  # like /tmp
    lure = tmp / f"croft-crashes-{os.geteuid()}"
    as_user(
        mallory,
        f"mkdir -m 777 {shlex.quote(str(lure))} && ln -s {shlex.quote(str(lure))} {shlex.quote(str(tmp / 'croft-crashes'))}",
    )
    assert lure.stat().st_uid == mallory.uid
    root = shared / "proj"
    root.mkdir()
    (root / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    (root / ".croft").write_text("a file, so no state folder can be made")  # stops root too
    (shared / "cache").write_text("nor a cache folder")
    monkeypatch.chdir(root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))

    def explode(*_: object) -> None:
        raise RuntimeError("a bug in croft")

    monkeypatch.setattr("croft.engine.status.project_status", explode)
    from croft.cli.main import main

    with pytest.raises(SystemExit):
        main(["status", "--json"])
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    crash = Path(problem["details"]["crashFile"])
    assert list(lure.iterdir()) == []  # nothing landed in her folder
    assert crash.parent.parent == tmp and crash.parent != lure and str(crash) in problem["message"]
    folder, file = crash.parent.stat(), crash.stat()
    assert folder.st_uid == file.st_uid == 0
    assert stat.S_IMODE(folder.st_mode) == 0o700 and stat.S_IMODE(file.st_mode) == 0o600
    assert "a bug in croft" in crash.read_text()
