"""The scheduler acts only on files this user owns and no one else can write (``scheduler.user.trusted``):
``tick --all`` and serve refuse an unsafe CROFT_HOME and skip an unsafe project; ``schedule on`` refuses
both; status and doctor say so in the same words, with a fix that works.

Modes are set by the test itself; another user's files (root only) are given to the uid ``nobody`` has.
The journey with a real second unix user is tests/e2e/test_other_user.py.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jobskit import FakeOS
from schedulekit import scheduled

from croft.core.clock import parse_instant
from croft.core.problems import CroftError
from croft.project.config import load_project
from croft.scheduler.control.commands import schedule_off, schedule_on
from croft.scheduler.control.diagnosis import unsafe_warning
from croft.scheduler.control.doctor import doctor
from croft.scheduler.jobs.spec import job_spec
from croft.scheduler.setting import read_scheduling_file
from croft.scheduler.tick import here
from croft.scheduler.user import fulltick
from croft.scheduler.user import serve as userserve
from croft.scheduler.user import tick_all as usertick
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.servenote import serve_path, write_serve
from croft.scheduler.user.trusted import home_unsafe, project_unsafe

NOW = "2026-03-01T12:00:00Z"
OTHER = 65534


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The project ticks ``tick --all`` would start (recorded, not started)."""
    roots: list[str] = []

    def full_ticks(
        full: list[str], home: str, log: Any, env: dict[str, str], started: Any, **_: Any
    ) -> dict[str, Any]:
        answers = {}
        for root in full:
            roots.append(root)
            started(root, 4242)
            answers[root] = {"root": root, "exited": None, "ping": None, "error": None}
        return answers

    monkeypatch.setattr(fulltick, "full_ticks", full_ticks)
    monkeypatch.setattr(here, "HERE_AT_MOST", 0)  # every full tick goes through full_ticks, recorded
    monkeypatch.setenv("CROFT_NOW", NOW)
    return roots


def on(root: Path, via: str = "os-job") -> Path:
    scheduled(root, "on", via=via)
    Registry().add(root, via, parse_instant(NOW))  # type: ignore[arg-type]
    return root


def log_of(home: Path) -> str:
    path = home / "logs" / "tick.log"
    return path.read_text() if path.exists() else ""


def sh(command: str) -> None:
    subprocess.run(["sh", "-c", command], check=True)


@pytest.mark.parametrize("name", ["", "projects.json", "job.json", "slots.sqlite", "logs"])
@pytest.mark.parametrize("bits", [0o002, 0o020])
def test_a_croft_home_others_or_the_group_can_write_stops_the_tick_and_is_written_nothing(
    tmp_path: Path, started: list[str], _croft_home: Path, name: str, bits: int
) -> None:
    mine = on(tmp_path / "mine")
    target = _croft_home / name if name else _croft_home
    if name == "logs":
        target.mkdir(mode=0o700)
    elif name:
        target.touch() if name != "projects.json" else None
    target.chmod(stat.S_IMODE(target.stat().st_mode) | bits)
    before = sorted(p.name for p in _croft_home.iterdir())
    with pytest.raises(CroftError) as err:
        usertick.tick_all()
    problem = err.value.problem
    assert problem.code == "UNSAFE_PERMISSIONS" and problem.details["path"] == str(target)  # type: ignore[index]
    assert str(target) in problem.message and ("group" in problem.message or "anyone" in problem.message)
    assert started == [] and sorted(p.name for p in _croft_home.iterdir()) == before  # nothing written
    sh(problem.fix["command"])  # type: ignore[index]  # chmod go-w: the fix works as written
    assert home_unsafe(_croft_home) is None
    assert usertick.tick_all()["started"] == [{"root": str(mine), "pid": 4242}]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_registry_that_belongs_to_another_user_is_moved_aside_by_its_fix(
    tmp_path: Path, started: list[str], _croft_home: Path
) -> None:
    on(tmp_path / "mine")
    registry = _croft_home / "projects.json"
    os.chown(registry, OTHER, OTHER)
    with pytest.raises(CroftError) as err:
        usertick.tick_all()
    problem = err.value.problem
    assert "belongs to another user" in problem.message and started == []
    assert problem.fix["command"] == f"mv {registry} {registry}.untrusted"  # type: ignore[index]
    sh(problem.fix["command"])  # type: ignore[index]
    assert home_unsafe(_croft_home) is None and not registry.exists()


def test_a_project_others_can_write_is_skipped_logged_and_the_rest_tick(
    tmp_path: Path, started: list[str], _croft_home: Path
) -> None:
    mine = on(tmp_path / "mine")
    shared = on(tmp_path / "shared")
    team = on(tmp_path / "team")
    (shared / ".croft").chmod(0o777)
    (team / "assets").mkdir()
    (team / "assets").chmod(0o775)  # the group may write a project: a team's shared folder
    result = usertick.tick_all()
    assert sorted(started) == sorted([str(mine), str(team)])
    skipped = {s["root"]: s for s in result["skipped"]}
    assert skipped[str(shared)]["reason"] == "unsafe permissions"
    assert skipped[str(shared)]["path"] == str(shared / ".croft")
    line = (
        f"shared: not ticked, croft does not trust {shared / '.croft'}: anyone on this machine can write it"
    )
    assert f"{line}; fix: chmod go-w {shared / '.croft'}" in log_of(_croft_home)


@pytest.mark.parametrize("part", ["", "croft.json", "assets", "lib", ".croft", "elsewhere"])
def test_each_part_of_a_project_is_checked(tmp_path: Path, part: str) -> None:
    root = scheduled(tmp_path / "p", "on", state_dir=tmp_path / "elsewhere" if part == "elsewhere" else None)
    path = tmp_path / "elsewhere" if part == "elsewhere" else root / part
    path.mkdir(exist_ok=True) if part in ("assets", "lib") else None
    path.chmod(stat.S_IMODE(path.stat().st_mode) | 0o002)
    found = project_unsafe(str(root), tmp_path / "elsewhere" if part == "elsewhere" else None)
    assert found is not None and found.path == str(path)


def test_a_relocated_state_folder_is_checked_by_the_tick(tmp_path: Path, started: list[str]) -> None:
    moved = tmp_path / "moved"
    scheduled(moved, "on", state_dir=tmp_path / "state")
    Registry().add(moved, "os-job", parse_instant(NOW))
    (tmp_path / "state").chmod(0o777)
    result = usertick.tick_all()
    assert started == [] and result["skipped"][0]["path"] == str(tmp_path / "state")


def test_status_and_doctor_say_the_same_words_and_the_fix_works(make_project, _croft_home: Path) -> None:
    root = make_project({})
    project = load_project(root)
    scheduled(root, "on", via="os-job")
    Registry().add(root, "os-job", parse_instant(NOW))
    assert unsafe_warning(project) is None
    (root / "croft.json").chmod(0o666)
    warning = unsafe_warning(project)
    assert warning is not None and warning.code == "UNSAFE_PERMISSIONS" and warning.severity == "warning"
    checks = {c["check"]: c for c in doctor(project=project).data["checks"]}
    link = checks[f"project {root}"]
    assert not link["ok"] and link["detail"] == warning.message
    assert link["fix"] == warning.fix["command"] == f"chmod o-w {root / 'croft.json'}"  # type: ignore[index]
    assert checks["permissions"]["ok"]
    sh(link["fix"])
    assert unsafe_warning(project) is None
    _croft_home.chmod(0o770)  # now CROFT_HOME: the permissions link, and status names it
    warning = unsafe_warning(project)
    checks = {c["check"]: c for c in doctor(project=project).data["checks"]}
    assert not checks["permissions"]["ok"] and checks["permissions"]["detail"] == warning.message  # type: ignore[union-attr]
    assert checks["permissions"]["fix"] == f"chmod go-w {_croft_home}"
    sh(checks["permissions"]["fix"])
    assert unsafe_warning(project) is None


@pytest.mark.processes
def test_croft_status_shows_it(make_project) -> None:
    root = make_project({})
    scheduled(root, "on", via="os-job")
    (root / ".croft").chmod(0o777)
    done = subprocess.run(
        [sys.executable, "-m", "croft", "status", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "CROFT_NOW": NOW},
    )
    envelope = json.loads(done.stdout)
    # stale (nothing ticks it here): exit 1 by SCHEDULER_STALE alone; the unsafe folder is a warning
    assert done.returncode in (0, 1) and all(
        p["code"] == "SCHEDULER_STALE" for p in envelope["problems"] if p["severity"] == "error"
    )
    (found,) = [p for p in envelope["problems"] if p["code"] == "UNSAFE_PERMISSIONS"]
    assert (
        found["fix"]["command"] == f"chmod go-w {root / '.croft'}"
        and found["docs"] == "croft docs UNSAFE_PERMISSIONS"
    )


def test_schedule_on_refuses_having_written_nothing(make_project, _croft_home: Path) -> None:
    project = load_project(make_project({}))
    (project.root / "assets").chmod(0o777)
    with pytest.raises(CroftError) as err:
        schedule_on(project, no_os_job=True, runner=FakeOS())
    assert (
        err.value.code == "UNSAFE_PERMISSIONS" and str(project.root / "assets") in err.value.problem.message
    )
    assert read_scheduling_file(project.config.state_dir).state == "off" and Registry().entries() == []
    (project.root / "assets").chmod(0o755)
    _croft_home.chmod(0o777)
    fake = FakeOS()
    with pytest.raises(CroftError) as err:
        schedule_on(project, backend_name="crontab", runner=fake)
    assert err.value.problem.details["path"] == str(_croft_home) and fake.calls == []  # type: ignore[index]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_another_users_project_is_taken_off_the_schedule_without_writing_into_it(
    tmp_path: Path, started: list[str], _croft_home: Path
) -> None:
    mine = on(tmp_path / "mine")
    theirs = on(tmp_path / "theirs")
    for folder, _dirs, files in os.walk(theirs):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, OTHER, OTHER)
    result = usertick.tick_all()
    assert started == [str(mine)]
    assert [s["path"] for s in result["skipped"]] == [str(theirs)]
    checks = {c["check"]: c for c in doctor().data["checks"]}
    fix = checks[f"project {theirs}"]["fix"]
    assert fix == f"croft schedule off --project {theirs}"
    history = theirs / ".croft" / "runs.sqlite"
    before = (history.read_bytes(), history.stat().st_mtime_ns)
    schedule_off(load_project(theirs), runner=FakeOS())
    assert [e.root for e in Registry().entries()] == [str(mine)]
    assert (history.read_bytes(), history.stat().st_mtime_ns) == before


def test_serves_minute_skips_an_unsafe_project_and_serve_refuses_an_unsafe_home(
    tmp_path: Path, started: list[str], _croft_home: Path
) -> None:
    """While a croft serve is alive (this process, by its note), the minute ticks the --no-os-job projects
    with the same trust check as any; serve's minute in an unsafe home starts nothing and writes nothing."""
    mine = on(tmp_path / "mine", via="serve")
    shared = on(tmp_path / "shared", via="serve")
    (shared / "lib").mkdir()
    (shared / "lib").chmod(0o777)
    assert usertick.tick_all()["skipped"] == [
        {"root": str(mine), "reason": "ticks from croft serve"},
        {"root": str(shared), "reason": "ticks from croft serve"},
    ]  # no croft serve alive: not this minute's
    write_serve(_croft_home)  # this process is the live croft serve
    result = usertick.tick_all()
    assert started == [str(mine)] and [s["path"] for s in result["skipped"]] == [str(shared / "lib")]
    assert f"shared: not ticked, croft does not trust {shared / 'lib'}" in log_of(_croft_home)
    _croft_home.chmod(0o777)
    size = (_croft_home / "logs" / "tick.log").stat().st_size
    server = userserve.Server(_croft_home)
    assert server.minute().startswith("refused: ") and server.child is None
    assert (_croft_home / "logs" / "tick.log").stat().st_size == size
    serve_path(_croft_home).unlink()
    with pytest.raises(CroftError) as err:
        userserve.serve()
    assert err.value.code == "UNSAFE_PERMISSIONS" and not serve_path(_croft_home).exists()


@pytest.mark.processes
def test_the_os_jobs_own_log_redirect_gets_no_byte_of_the_refusal(_croft_home: Path, tmp_path: Path) -> None:
    """The job appends croft's output to the tick log in CROFT_HOME; one others can write may have that log
    pointing at any file, which root's job would append to. So the refusal goes only to a person."""
    target = tmp_path / "someone else's file"
    target.write_text("precious\n")
    (_croft_home / "logs").mkdir(mode=0o700)
    (_croft_home / "logs" / "tick.log").symlink_to(target)
    _croft_home.chmod(0o777)
    log = shlex.quote(str(_croft_home / "logs" / "tick.log"))
    done = subprocess.run(
        ["sh", "-c", f"{shlex.join(job_spec(sys.executable).argv())} >> {log} 2>&1"],  # the job's command
        env={**os.environ, "CROFT_NOW": NOW},
    )
    assert done.returncode == 2 and target.read_text() == "precious\n"  # UNSAFE_PERMISSIONS exits 2
    by_hand = subprocess.run(
        [sys.executable, "-m", "croft", "tick", "--all"],
        capture_output=True,
        text=True,
        env={**os.environ, "CROFT_NOW": NOW},
    )
    assert (
        by_hand.returncode == 2
        and "UNSAFE_PERMISSIONS" in by_hand.stderr
        and str(_croft_home) in by_hand.stderr
    )
