"""Never silent, part two: the ordinary events of a laptop's life, each reproduced on real files with real
``croft`` processes, and what croft now does about it.

The clock moves back; a checkout takes croft.json away for a minute; runs.sqlite is emptied or moved
aside; croft.json breaks after ``schedule on``; the group's own options; a zero wait; a full disk under
``schedule on`` and ``off``; a pause and ``off`` seen by ``schedule status``; one cause, one alert; and a
resume of a job that already ticks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from brokenkit import env, every_view_names, fill, looks, problem_of, served, small_disk, until_green
from schedulekit import croft_json, runs_of, schedule_on, state_of, tick, wait_for_runs
from waiting import wait_for

from croft.scheduler import incidents
from croft.scheduler.heartbeat import last_heartbeat
from croft.scheduler.user.registry import Registry

YEARLY = """
from croft import ingest


@ingest(schedule="0 0 1 1 *", key="id")
def rows(ctx):
    yield [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
"""


def _croft(cwd: Path, *args: str, **extra: str) -> tuple[int, str, str]:
    """A real ``croft ARGS`` (no ``--json`` added): exit code, stdout, stderr; never a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "croft", *args],
        cwd=cwd,
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def _envelope(cwd: Path, *args: str, **extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = _croft(cwd, *args, **extra)
    try:
        return code, json.loads(out)
    except ValueError:
        raise AssertionError(f"croft {' '.join(args)}: not one envelope: {out!r} {err!r}") from None


# -- the group's options: --project and --json given before the action ----------------------------------


def test_the_schedule_groups_options_are_honoured_before_the_action(make_project, tmp_path):
    here = make_project(root=tmp_path / "p1")
    there = make_project(root=tmp_path / "p2")
    code, on = _envelope(here, "schedule", "--project", "../p2", "on", "--no-os-job", "--json")
    assert code == 0 and on["data"]["root"] == str(there.resolve())
    code, mine = _envelope(here, "schedule", "status", "--json")
    assert mine["data"]["scheduling"]["state"] == "off"  # the current folder's project was left alone
    code, theirs = _envelope(there, "schedule", "status", "--json")
    assert theirs["data"]["scheduling"]["state"] == "on"
    # --json on the group: every action prints one envelope, explain included
    for argv in (["explain", "every hour"], ["status"], ["pause", "--for", "1h"], ["on", "--no-os-job"]):
        code, envelope = _envelope(here, "schedule", "--json", "--project", "../p2", *argv)
        assert code == 0 and envelope["ok"], (argv, envelope)
    code, explained = _envelope(
        there.parent, "schedule", "--project", str(there), "--json", "explain", "daily at 9am"
    )
    assert explained["data"]["timezone"] == "Europe/London"  # the group's project gives the zone
    # two different folders, one on each side: refused as a usage error, nothing changed
    code, refused = _envelope(here, "schedule", "--project", "../p2", "off", "--project", ".", "--json")
    assert code == 2 and refused["problems"][0]["code"] == "USAGE"
    code, still = _envelope(there, "schedule", "status", "--json")
    assert still["data"]["scheduling"]["state"] == "on"
    code, _out, _ = _croft(here, "schedule", "--project", "../p2", "off", "--project", "../p2")
    assert code == 0
    code, after = _envelope(there, "schedule", "status", "--json")
    assert after["data"]["scheduling"]["state"] == "off"


# -- croft.json broken after `schedule on`: an error line in doctor, exit 1 ----------------------------


def test_a_croft_json_broken_after_schedule_on_is_an_error_line_in_doctor(make_project, _croft_home):
    root = make_project({"assets/orders.py": YEARLY})
    assert _croft(root, "run")[0] == 0
    assert _croft(root, "schedule", "on", "--no-os-job")[0] == 0
    with served(_croft_home):
        until_green(root)  # ticked: fresh heartbeat, no incident
    (root / "croft.json").write_text('{"timezone": ')  # a half-saved edit
    for cwd in (root, root.parent):  # in the project, and anywhere else (the registry's projects)
        code, envelope = _envelope(cwd, "doctor", "--json")
        assert code == 1 and not envelope["ok"]
        [line] = [c for c in envelope["data"]["checks"] if c["check"] == f"project {root.resolve()}"]
        assert not line["ok"] and "croft.json is not valid JSON" in line["detail"], line
        bad = [p for p in envelope["problems"] if p["code"] == "CONFIG_INVALID"]
        assert bad and bad[0]["severity"] == "error" and bad[0]["details"]["cause"] == "config_unreadable"
    (root / "croft.json").write_text(json.dumps({"timezone": "Europe/London"}))
    code, envelope = _envelope(root.parent, "doctor", "--json")
    [line] = [c for c in envelope["data"]["checks"] if c["check"] == f"project {root.resolve()}"]
    assert line["ok"], line


# -- a 0-byte or moved-aside runs.sqlite on a project registered "on": HISTORY_LOST, told once ----------


def _on(make_project, **config) -> Path:  # type: ignore[no-untyped-def]
    root = make_project({"assets/orders.py": YEARLY}, **config)
    assert _croft(root, "run")[0] == 0
    assert _croft(root, "schedule", "on", "--no-os-job")[0] == 0
    return root


def _told(root: Path, code: str) -> list[dict[str, Any]]:
    log = root / ".croft" / "logs" / "notifications.ndjson"
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.loads(x) for x in lines if '"kind": "desktop"' in x and code in x]


@pytest.mark.parametrize("damage", ["zero-bytes", "moved-aside"])
def test_a_lost_history_is_told_once_shown_and_names_how_to_restore_it(make_project, _croft_home, damage):
    root = _on(make_project)
    history = root / ".croft" / "runs.sqlite"
    with served(_croft_home):
        until_green(root)
    saved = history.with_name("saved.sqlite")
    shutil.copy(history, saved)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{history}{suffix}").unlink(missing_ok=True)
    if damage == "zero-bytes":
        history.write_bytes(b"")
    with served(_croft_home):  # ticking every 300 ms while the views look: many rounds, told once
        wait_for(lambda: incidents.read(str(root.resolve())), "serve to record the incident")
        seen = wait_for(
            lambda: (lambda s: s if every_view_names(s, "HISTORY_LOST") else None)(looks(root)),
            "the lost history named in every view",
        )
        assert seen["doctor"][0] == 1
    lost = problem_of(seen, "schedule status", "HISTORY_LOST")
    assert "approvals" in lost["hint"] and str(history) in lost["hint"]
    assert lost["fix"]["command"].startswith("croft schedule on --no-os-job --project ")
    [told] = _told(root, "HISTORY_LOST")
    assert "HISTORY_LOST" in told["body"]
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert log.count("not ticked: HISTORY_LOST") == 1
    # the old file put back, as the hint says: everything it held resumes, approvals included
    for suffix in ("", "-wal", "-shm"):
        Path(f"{history}{suffix}").unlink(missing_ok=True)
    shutil.move(saved, history)
    with served(_croft_home):
        until_green(root)
    assert incidents.read(str(root.resolve())) is None


def test_tick_all_tells_a_lost_history_once(make_project, _croft_home):
    root = make_project({"assets/orders.py": YEARLY})
    assert _croft(root, "run")[0] == 0
    assert _envelope(root, "schedule", "on", "--no-os-job", "--json")[0] == 0
    Registry().add(root, "os-job", datetime.now(UTC))  # as `schedule on` with the OS job leaves it
    history = root / ".croft" / "runs.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{history}{suffix}").unlink(missing_ok=True)
    history.write_bytes(b"")
    for _ in range(3):  # three minutes of the OS job: never a quiet "scheduling is off"
        _code, envelope = _envelope(root, "tick", "--all", "--json")
        [lost] = [p for p in envelope["problems"] if p["code"] == "HISTORY_LOST"]
        assert lost["details"]["root"] == str(root.resolve())
    assert len(_told(root, "HISTORY_LOST")) == 1
    assert (_croft_home / "logs" / "tick.log").read_text().count("not ticked: HISTORY_LOST") == 1


# -- croft.json away for a minute (git checkout, git stash): kept, told once, resumes ------------------


def test_a_croft_json_away_for_a_while_is_told_once_and_ticking_resumes_when_it_is_back(
    make_project, _croft_home
):
    root = _on(make_project)
    config = root / "croft.json"
    text = config.read_text()
    with served(_croft_home):
        until_green(root)
        config.unlink()  # git stash
        wait_for(
            lambda: (
                (incidents.read(str(root.resolve())) or {}).get("problem", {}).get("code") == "PROJECT_GONE"
            ),
            "serve to record the project as gone",
        )
        before = last_heartbeat(root / ".croft") or ""
        code, doctor = _envelope(root.parent, "doctor", "--json")
        assert code == 1 and any(p["code"] == "PROJECT_GONE" for p in doctor["problems"]), doctor
        config.write_text(text)  # git stash pop
        wait_for(lambda: (last_heartbeat(root / ".croft") or "") > before, "a tick once it is back")
        until_green(root)
    [entry] = json.loads((_croft_home / "projects.json").read_text())
    assert entry["root"] == str(root.resolve()) and "missingSince" not in entry  # still registered
    assert len(_told(root, "PROJECT_GONE")) == 1
    assert incidents.read(str(root.resolve())) is None


# -- the clock moves back: the next fire by today's clock runs; told once, shown ------------------------

EVERY_MINUTE = """
from croft import ingest


@ingest(schedule="every minute", key="id")
def rows(ctx):
    yield [{"id": 1, "n": 1}]
"""


def test_after_the_clock_moves_back_the_next_fire_by_todays_clock_runs_and_it_is_said_once(make_project):
    root = make_project({"assets/orders.py": EVERY_MINUTE}, timezone="UTC")
    assert croft_json(root, "2026-06-01T09:30:10Z", "run")[0] == 0
    schedule_on(root, "2026-06-01T09:30:20Z")
    ahead = tick(root, "2026-06-01T14:30:30Z")  # a tick at +5 h (a clock wrong at boot, a CROFT_NOW ahead)
    assert len(ahead["spawned"]) == 1
    assert state_of(root, "orders")["last_fire_at"] == "2026-06-01T14:30:00.000Z"
    # back at the real clock: the minute's fire is covered by the one handled ahead; the next one runs
    code, back = croft_json(root, "2026-06-01T09:31:30Z", "tick")
    assert code == 0 and back["data"]["spawned"] == []
    [moved] = back["problems"]
    assert moved["code"] == "CLOCK_MOVED_BACK" and "2026-06-01T14:30" in moved["message"]
    assert _tick_problems(root, "2026-06-01T09:31:40Z") == []  # said by the tick that found it
    assert state_of(root, "orders")["last_fire_at"] == "2026-06-01T09:31:00.000Z"  # corrected
    for minute in ("32", "33"):
        data = tick(root, f"2026-06-01T09:{minute}:05Z")
        assert len(data["spawned"]) == 1, data  # every minute again, not after five hours
        assert state_of(root, "orders")["last_fire_at"] == f"2026-06-01T09:{minute}:00.000Z"
    scheduled_runs = [r for r in runs_of(root) if r["trigger"] == "schedule"]
    assert len(scheduled_runs) == 3 and all(r["status"] == "succeeded" for r in scheduled_runs)
    told = _told(root, "CLOCK_MOVED_BACK")
    assert len(told) == 1, told  # told once, however many ticks met it
    for argv in (["status"], ["schedule", "status"]):
        code, envelope = croft_json(root, "2026-06-01T09:34:00Z", *argv)
        [moved] = [p for p in envelope["problems"] if p["code"] == "CLOCK_MOVED_BACK"]
        assert "2026-06-01T14:30" in moved["message"], moved
    code, envelope = croft_json(root, "2026-06-01T09:34:00Z", "doctor")
    [line] = [c for c in envelope["data"]["checks"] if c["check"] == f"project {root.resolve()}"]
    assert line.get("warning") and "clock moved back" in line["detail"], line
    # the clock caught up: the notice is over
    tick(root, "2026-06-01T14:31:10Z")
    assert incidents.read(str(root.resolve())) is None


def _tick_problems(root: Path, now: str) -> list[dict[str, Any]]:
    code, envelope = croft_json(root, now, "tick")
    assert code == 0, envelope
    wait_for_runs(root)
    return list(envelope["problems"])


# -- while paused, a held asset is said held; after off, no next fire -----------------------------------


def test_paused_status_promises_nothing_for_held_code_and_off_shows_no_next_fire(make_project):
    root = make_project({"assets/orders.py": EVERY_MINUTE, "assets/fresh.py": YEARLY}, timezone="UTC")
    assert croft_json(root, "2026-06-01T09:00:00Z", "run", "orders")[0] == 0  # approved; fresh never run
    schedule_on(root, "2026-06-01T09:00:30Z")
    assert croft_json(root, "2026-06-01T09:01:00Z", "schedule", "pause")[0] == 0
    _code, envelope = croft_json(root, "2026-06-01T09:30:00Z", "schedule", "status")
    data = envelope["data"]
    promised = {c["asset"]: c["text"] for c in data["catchUp"]}
    assert promised == {"orders": "will run once when the pause ends: 30 fires missed while paused"}
    rows = {r["asset"]: r for r in data["assets"]}
    assert rows["fresh"]["held"]["code"] == "SCHEDULE_HELD"  # held, and said so, paused or not
    assert rows["orders"]["held"]["code"] == "SCHEDULE_PAUSED"
    assert croft_json(root, "2026-06-01T09:31:00Z", "schedule", "off")[0] == 0
    _code, envelope = croft_json(root, "2026-06-01T09:32:00Z", "schedule", "status")
    assert [r["nextFire"] for r in envelope["data"]["assets"]] == [None, None]
    done = subprocess.run(
        [sys.executable, "-m", "croft", "schedule", "status"],
        cwd=root,
        env=env(CROFT_NOW="2026-06-01T09:32:00Z"),
        capture_output=True,
        text=True,
    )
    orders = next(line for line in done.stdout.splitlines() if line.startswith("orders "))
    assert " n/a " in orders and "in under a minute" not in orders, done.stdout


# -- schedule on / off on a full disk: wholly or not at all ---------------------------------------------


def test_schedule_on_and_off_on_a_full_croft_home_change_nothing(make_project, tmp_path, monkeypatch):
    with small_disk(tmp_path / "disk", "1m") as disk:
        home = disk / "home"
        monkeypatch.setenv("CROFT_HOME", str(home))
        first = _on(make_project, timezone="UTC")
        second = make_project(root=tmp_path / "second")
        registry = home / "projects.json"
        listed = registry.read_text()
        filler = fill(disk)
        code, off = _envelope(first, "schedule", "off", "--json")
        assert code != 0 and off["problems"][0]["code"] == "DISK_FULL", off
        assert _state(first) == "on" and registry.read_text() == listed  # not half applied
        code, on = _envelope(second, "schedule", "on", "--no-os-job", "--json")
        assert code != 0 and on["problems"][0]["code"] == "DISK_FULL", on
        assert _state(second) == "off" and registry.read_text() == listed
        filler.unlink()  # space again: both go through
        assert _envelope(first, "schedule", "off", "--json")[0] == 0
        assert _envelope(second, "schedule", "on", "--no-os-job", "--json")[0] == 0
        assert _state(first) == "off" and _state(second) == "on"
        assert [e["root"] for e in json.loads(registry.read_text())] == [str(second.resolve())]


def _state(root: Path) -> str:
    _code, envelope = _envelope(root, "schedule", "status", "--json")
    return str(envelope["data"]["scheduling"]["state"])
