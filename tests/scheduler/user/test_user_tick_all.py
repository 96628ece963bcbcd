"""``croft tick --all``: which projects it starts, with what, and what it costs to import."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from schedulekit import scheduled
from waiting import wait_for

from croft.core import children
from croft.core.children import ENV_TABLE, croft_env
from croft.core.clock import parse_instant
from croft.scheduler import incidents
from croft.scheduler.tick import here
from croft.scheduler.ticklog import ROTATE_BYTES
from croft.scheduler.user import tick_all as usertick
from croft.scheduler.user.registry import Registry
from croft.scheduler.user.wakefile import read_state

pytestmark = pytest.mark.processes

NOW = "2026-03-01T12:00:00Z"
REAL_PYTHON = sys.executable  # the fake_python fixture replaces sys.executable itself


def wait_records(record: Path, count: int) -> dict[str, dict]:
    """{project folder name: {argv, cwd, env}} once ``count`` fake ticks have written their record."""

    def done() -> list[Path]:
        finished = [f for f in record.glob("*.json") if f.read_text().endswith("\n")]
        return finished if len(finished) >= count else []

    out = {}
    for f in wait_for(done, lambda: f"{count} ticks to start; {len(list(record.glob('*.json')))} did"):
        env = dict(
            line.split("=", 1) for line in (record / f"{f.stem}.env").read_text().splitlines() if "=" in line
        )
        argv = (record / f"{f.stem}.args").read_text().splitlines()
        out[f.stem] = {"argv": argv, "cwd": f.read_text().strip(), "env": env}
    return out


@pytest.fixture
def fake_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An "interpreter" that, as the worker of full ticks (``croft tick --batch``), takes one project folder
    a line, goes there and records its arguments, folder and environment instead of ticking, then
    answers as the worker does."""
    record = tmp_path / "record"
    record.mkdir()
    script = tmp_path / "bin dir" / "python"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        "while IFS= read -r line; do\n"
        """  root=$(printf '%s' "$line" | sed -e 's/^{"root": "//' -e 's/", "name": .*//')\n"""
        '  cd "$root" || continue\n'
        f'  out="{record}/$(basename "$PWD")"\n'
        '  printf "%s\\n" "$@" > "$out.args"\n'
        '  env > "$out.env"\n'
        '  echo "project tick output from $PWD" >&2\n'
        '  pwd > "$out.json"\n'
        """  printf '{"root": "%s", "exited": null, "ping": null, "error": null}\\n' "$root"\n"""
        "done\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(children.sys, "executable", str(script))  # the one command of a project tick
    # these tests look at what goes to the workers: none of their few projects is ticked in-process
    monkeypatch.setattr(here, "HERE_AT_MOST", 0)
    return record


def test_starts_only_os_job_projects_whose_scheduling_is_on(
    tmp_path: Path, fake_python: Path, monkeypatch: pytest.MonkeyPatch, _croft_home: Path
) -> None:
    monkeypatch.setenv("CROFT_NOW", NOW)
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    reg = Registry()
    roots = {
        "on": scheduled(tmp_path / "on", "on"),
        "expired": scheduled(tmp_path / "expired", "paused", until="2026-03-01T11:30:00Z"),
        "paused": scheduled(tmp_path / "paused", "paused", until="2026-03-01T13:00:00Z"),
        "off": scheduled(tmp_path / "off", "off"),
        "viaserve": scheduled(tmp_path / "viaserve", "on", via="serve"),
        "moved": scheduled(tmp_path / "moved", "on", state_dir=tmp_path / "elsewhere"),
    }
    (tmp_path / "nohistory").mkdir()
    (tmp_path / "nohistory" / "croft.json").write_text("{}")
    roots["nohistory"] = tmp_path / "nohistory"
    for name, root in roots.items():
        reg.add(root, "serve" if name == "viaserve" else "os-job", parse_instant(NOW))
    result = usertick.tick_all()
    started = sorted(Path(s["root"]).name for s in result["started"])
    assert started == ["expired", "moved", "on"]
    skipped = {Path(s["root"]).name: s["reason"] for s in result["skipped"]}
    assert skipped == {
        "paused": "scheduling is paused",
        "off": "scheduling is off",
        "viaserve": "ticks from croft serve",
        "nohistory": "scheduling is off",
    }
    records = wait_records(fake_python, 3)
    on = records["on"]
    assert on["argv"] == ["-P", "-m", "croft", "tick", "--batch"] and on["cwd"] == str(roots["on"])
    assert "SECRET_TOKEN" not in on["env"]
    assert on["env"]["CROFT_HOME"] == str(_croft_home) and on["env"]["CROFT_NOW"] == NOW
    passed = {name for name in on["env"] if not name.startswith("CROFT_")}  # every CROFT_* knob passes
    assert passed <= {"PWD", "SHLVL", "_", "OLDPWD", "PYTHONUNBUFFERED", *ENV_TABLE}
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert f"{NOW[:-1]}.000Z on: tick started (pid " in log  # its folder's name: no other project has it
    assert (_croft_home / "logs" / "tick.log").stat().st_mode & 0o777 == 0o600
    assert f"project tick output from {roots['on']}" in log  # the child's own output is appended too


def test_child_env_is_built_from_scratch(tmp_path: Path) -> None:
    env = croft_env(
        {"HOME": "/h", "PATH": "/x:/usr/bin", "API_KEY": "s3cret", "TZ": "UTC"}, croft_home=str(tmp_path)
    )
    assert env["PATH"].split(":")[:1] == [os.path.dirname(sys.executable)]
    parts = env["PATH"].split(":")
    assert "/x" in parts and parts.count("/usr/bin") == 1
    assert env["LANG"] == "C.UTF-8" and env["TZ"] == "UTC" and "API_KEY" not in env


def test_a_gone_project_is_told_once_kept_and_ticked_again_when_it_is_back(
    tmp_path: Path, fake_python: Path, _croft_home: Path
) -> None:
    """A checkout that took croft.json away for a minute once unregistered the project for good, quietly."""
    reg = Registry()
    on = scheduled(tmp_path / "on", "on")
    gone = scheduled(tmp_path / "gone", "on")
    reg.add(on, "os-job", parse_instant(NOW))
    reg.add(gone, "os-job", parse_instant(NOW))
    config = (gone / "croft.json").read_text()
    (gone / "croft.json").unlink()
    result = usertick.tick_all()
    assert [s["root"] for s in result["started"]] == [str(on)]
    assert [e.root for e in reg.entries()] == [str(on), str(gone)]  # kept
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert "gone: not ticked: PROJECT_GONE: gone, its folder or croft.json is gone" in log
    assert f"{gone} is gone: its folder or croft.json is gone; it stays on the schedule" in log
    found = incidents.read(str(gone))
    assert found is not None and found["problem"]["code"] == "PROJECT_GONE" and found["told"]
    wait_records(fake_python, 1)
    usertick.tick_all()  # a second minute away: not told again
    assert (_croft_home / "logs" / "tick.log").read_text().count("PROJECT_GONE") == 1
    (gone / "croft.json").write_text(config)  # back (git stash pop)
    result = usertick.tick_all()
    assert sorted(s["root"] for s in result["started"]) == sorted([str(on), str(gone)])
    assert incidents.read(str(gone)) is None and reg.find(gone).missing_since is None  # type: ignore[union-attr]
    wait_records(fake_python, 2)  # the project back was ticked


def test_a_project_away_for_seven_days_is_taken_off_and_told_again(
    tmp_path: Path, fake_python: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = Registry()
    gone = scheduled(tmp_path / "gone", "on")
    reg.add(gone, "os-job", parse_instant(NOW))
    (gone / "croft.json").unlink()
    monkeypatch.setenv("CROFT_NOW", NOW)
    usertick.tick_all()
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T11:59:00Z")
    usertick.tick_all()
    assert len(reg.entries()) == 1  # not quite seven days
    monkeypatch.setenv("CROFT_NOW", "2026-03-08T12:00:00Z")
    usertick.tick_all()
    assert reg.entries() == []
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert f"removed {gone} from the schedule: gone since" in log and "(7 days or more)" in log
    told = [
        line
        for line in (gone / ".croft" / "logs" / "notifications.ndjson").read_text().splitlines()
        if "PROJECT_GONE" in line
    ]
    assert (
        len(told) == 2 and "taken off the schedule" in told[1]
    )  # told when it went, and when it was dropped
    assert incidents.read(str(gone)) is None


@pytest.mark.parametrize("damage", ["[{", ""], ids=["truncated", "zero-bytes"])
def test_corrupt_registry_without_a_copy_is_logged_and_left_alone(_croft_home: Path, damage: str) -> None:
    """No last good copy to restore from: CONFIG_INVALID (exit 2, as every project-family refusal) with
    the fix, a line in the tick log, and the file left as it is. A 0-byte file once meant "no projects"."""
    (_croft_home / "projects.json").write_text(damage)
    done = subprocess.run(
        [sys.executable, "-m", "croft", "tick", "--all", "--json"], capture_output=True, text=True
    )
    assert done.returncode == 2
    envelope = json.loads(done.stdout)
    assert envelope["problems"][0]["code"] == "CONFIG_INVALID" and envelope["problems"][0]["fix"]
    assert "tick failed:" in (_croft_home / "logs" / "tick.log").read_text()
    assert (_croft_home / "projects.json").read_text() == damage


def test_a_registry_lost_between_two_minutes_is_restored_and_its_projects_tick(
    tmp_path: Path, _croft_home: Path
) -> None:
    """With its last good copy beside it, a registry found empty is restored with a line in the tick log,
    and the projects it lists tick that same minute: nothing silently stops."""
    root = scheduled(tmp_path / "p", "on")
    Registry(_croft_home).add(root, "os-job", parse_instant(NOW))
    (_croft_home / "projects.json").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "croft", "tick", "--all", "--json"],
        capture_output=True,
        text=True,
        env=os.environ | {"CROFT_NOW": NOW},
    )
    assert done.returncode == 0, done.stdout
    data = json.loads(done.stdout)["data"]
    assert [s["root"] for s in data["started"]] == [str(root.resolve())]
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert "restored 1 project(s) from its last good copy projects.json.bak" in log
    assert (_croft_home / "projects.json.broken").read_text() == ""


def test_no_registry_is_quiet(_croft_home: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "croft", "tick", "--all"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (_croft_home / "logs" / "tick.log").exists()


def test_log_is_rotated_past_5_mb(tmp_path: Path, _croft_home: Path, fake_python: Path) -> None:
    log = _croft_home / "logs" / "tick.log"
    log.parent.mkdir()
    log.write_bytes(b"x" * (ROTATE_BYTES + 1))
    Registry().add(scheduled(tmp_path / "on", "on"), "os-job", parse_instant(NOW))
    usertick.tick_all()
    assert (log.parent / "tick.log.1").stat().st_size == ROTATE_BYTES + 1
    assert log.stat().st_size < 1000


def test_a_real_tick_all_runs_no_asset_code(tmp_path: Path, _croft_home: Path) -> None:
    root = scheduled(tmp_path / "p", "off")
    (root / "assets").mkdir()
    (root / "assets" / "orders.py").write_text("import sys\nprint('ASSET CODE RAN', file=sys.stderr)\n")
    Registry().add(root, "os-job", parse_instant(NOW))
    done = subprocess.run([sys.executable, "-m", "croft", "tick", "--all"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "ASSET CODE RAN" not in done.stderr


def test_unknown_argument_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "croft", "tick", "--all", "--bogus", "--json"], capture_output=True, text=True
    )
    assert done.returncode == 2 and json.loads(done.stdout)["problems"][0]["code"] == "USAGE"


def test_sqlite_setting_read_never_creates_history(tmp_path: Path, _croft_home: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "croft.json").write_text("{}")
    Registry().add(root, "os-job", parse_instant(NOW))
    found = usertick.tick_all()
    assert not (root / ".croft" / "runs.sqlite").exists()
    # registered with no history at all (moved aside): said, never a quiet "scheduling is off"
    assert [p.code for p in found["problems"]] == ["HISTORY_LOST"]
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(f"file:{root}/.croft/runs.sqlite?mode=ro", uri=True).execute("select 1")


def test_the_remembered_setting_never_hides_a_change(
    tmp_path: Path, fake_python: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from croft.scheduler.user import wakestate

    root = scheduled(tmp_path / "p", "off")
    Registry().add(root, "os-job", parse_instant(NOW))
    assert usertick.tick_all()["skipped"] == [{"root": str(root), "reason": "scheduling is off"}]
    assert read_state(str(_croft_home))[str(root)]["setting"]["dir"] == str(root / ".croft")
    reads: list[object] = []
    real = wakestate.read_scheduling_file
    monkeypatch.setattr(wakestate, "read_scheduling_file", lambda d: reads.append(d) or real(d))
    assert usertick.tick_all()["skipped"][0]["reason"] == "scheduling is off"  # from the wake file
    assert reads == []
    scheduled(root, "on")  # turned on: runs.sqlite changed, so the cache is not trusted
    assert [s["root"] for s in usertick.tick_all()["started"]] == [str(root)]
    wait_records(fake_python, 1)


def test_a_locked_registry_is_pruned_next_minute_and_the_rest_still_ticks(
    tmp_path: Path, fake_python: Path, _croft_home: Path
) -> None:
    from schedulekit import HOLDER

    on = scheduled(tmp_path / "on", "on")
    gone = scheduled(tmp_path / "gone", "on")
    Registry().add(on, "os-job", parse_instant(NOW))
    Registry().add(gone, "os-job", parse_instant(NOW))
    (gone / "croft.json").unlink()
    holder = subprocess.Popen(
        [REAL_PYTHON, "-c", HOLDER, str(_croft_home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = usertick.tick_all()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
    assert (
        f"{_croft_home / 'projects.json'} is locked by another croft; pruning next minute" in result["notes"]
    )
    assert [s["root"] for s in result["started"]] == [str(on)]
    assert len(Registry().entries()) == 2  # nothing was pruned without the lock
    wait_records(fake_python, 1)


def test_one_broken_project_never_stops_the_others(
    tmp_path: Path, fake_python: Path, _croft_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = scheduled(tmp_path / "broken", "on")
    fine = scheduled(tmp_path / "fine", "on")
    for root in (broken, fine):
        Registry().add(root, "os-job", parse_instant(NOW))
    real = usertick.project_state_dir

    def state_dir(root: str) -> Path:
        if root == str(broken):
            raise RuntimeError("cannot read this one")
        return real(root)

    monkeypatch.setattr(usertick, "project_state_dir", state_dir)
    result = usertick.tick_all()
    assert [s["root"] for s in result["started"]] == [str(fine)]
    assert "broken: tick not started: RuntimeError: cannot read this one" in result["notes"]
    wait_records(fake_python, 1)
