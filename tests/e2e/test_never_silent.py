"""Never silent: each kind of broken state an outside probe found, broken on real files under a real
`croft serve` (or `croft tick --all`), at the real clock.

For each: the views are green first; the damage is done (garbage bytes, truncation, chmod 000, a full
or read-only tmpfs); by the next tick `croft status`, `croft schedule status` and `croft doctor` name the
problem (not green, with its fix); the cause goes (the fix croft gave, run as given, or the space or the
permission given back) and scheduling resumes by itself; nothing that was not broken is lost.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from brokenkit import (
    croft,
    every_view_names,
    fill,
    looks,
    owner_only,
    problem_of,
    remount,
    served,
    small_disk,
    until_green,
    until_said,
)
from waiting import wait_for

from croft.core.clock import to_iso
from croft.core.identity import current
from croft.history.db import open_history
from croft.history.state import release_tick, write_tick
from croft.scheduler import incidents
from croft.scheduler.heartbeat import last_heartbeat, write_user_beats
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user.registry import Registry

YEARLY = """
from croft import ingest


@ingest(schedule="0 0 1 1 *", key="id")
def rows(ctx):
    yield [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
"""


def _project(make_project, root: Path | None = None, on_at: str | None = None, **config) -> Path:  # type: ignore[no-untyped-def]
    root = make_project({"assets/orders.py": YEARLY}, root=root, **config)
    assert croft(root, "run")[0] == 0  # a person ran it: approved, and its last fire is covered
    code, on = croft(root, "schedule", "on", "--no-os-job", **({"CROFT_NOW": on_at} if on_at else {}))
    assert code == 0, on
    return root


def _rows(root: Path) -> list[tuple[int, int]]:
    conn = sqlite3.connect(f"file:{root / 'warehouse.sqlite'}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute("SELECT id, n FROM orders ORDER BY id")]
    finally:
        conn.close()


def _runs(root: Path) -> int:
    conn = sqlite3.connect(f"file:{root / '.croft' / 'runs.sqlite'}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
    finally:
        conn.close()


def _last_tick(root: Path) -> str:
    """The project's last heartbeat (read as the views read it), or ""."""
    return last_heartbeat(root / ".croft") or ""


def _resumes(root: Path, since: str, prefix: list[str] | None = None) -> None:
    """A tick after ``since`` (scheduling goes on by itself) and every view green again."""
    wait_for(lambda: _last_tick(root) > since, f"a tick of {root} after {since}")
    until_green(root, prefix)


# -- runs.sqlite: garbage, half a file, no permission ------------------------------------------------------


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_an_unreadable_history_is_named_everywhere_with_a_fix_that_works(make_project, _croft_home, damage):
    root = _project(make_project)
    history = root / ".croft" / "runs.sqlite"
    with served(_croft_home):
        until_green(root)
    rows = _rows(root)
    if damage == "garbage":
        history.write_bytes(os.urandom(4096))
    else:
        with open(history, "r+b") as handle:
            handle.truncate(history.stat().st_size // 2)
    with served(_croft_home):
        seen = until_said(root, "HISTORY_CORRUPT", status_fails=True)
        fix = problem_of(seen, "schedule status", "HISTORY_CORRUPT")["fix"]["command"]
        assert fix == f"mv {shlex.quote(str(history))} {shlex.quote(str(history))}.broken"
        subprocess.run(fix, shell=True, check=True)  # the fix croft gave, as given
        # the history went with the damage; the registry still lists the project: both say what to do
        seen = wait_for(
            lambda: (lambda s: s if every_view_names(s, "HISTORY_LOST") else None)(looks(root)),
            "the lost history named in every view",
        )
        lost = problem_of(seen, "doctor", "HISTORY_LOST")
        assert lost["details"]["cause"] == "setting_lost" and seen["doctor"][0] == 1
        again = problem_of(seen, "status", "HISTORY_LOST")["fix"]["command"]
        assert again == f"croft schedule on --no-os-job --project {shlex.quote(str(root))}"
        assert croft(root, *shlex.split(again)[1:])[0] == 0
        _resumes(root, "")
    assert _rows(root) == rows  # the warehouse was not broken, and is as it was
    assert history.with_name("runs.sqlite.broken").exists()


def test_a_history_without_permission_is_named_and_resumes_once_it_is_given_back(make_project, _croft_home):
    prefix = owner_only()
    root = _project(make_project)
    history = root / ".croft" / "runs.sqlite"
    with served(_croft_home, prefix):
        until_green(root, prefix)
    runs = _runs(root)
    history.chmod(0)
    try:
        with served(_croft_home, prefix):
            seen = until_said(root, "PATH_UNWRITABLE", status_fails=True, prefix=prefix)
            bad = problem_of(seen, "schedule status", "PATH_UNWRITABLE")
            assert str(history) in bad["message"]
            fix = bad["fix"]["command"]
            assert fix == f"chmod u+rw {shlex.quote(str(history))}"
            subprocess.run([*prefix, "sh", "-c", fix], check=True)  # the fix, as given, as the user
            until_green(root, prefix)
    finally:
        history.chmod(0o644)
    assert _runs(root) == runs  # nothing of the history was lost


# -- a full disk, a read-only disk ----------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["full", "read-only"])
def test_a_full_or_read_only_disk_is_named_and_scheduling_resumes_when_it_is_fixed(
    make_project, _croft_home, tmp_path, server, damage
):
    server.route("POST", "/hook", server.reply(204))
    with small_disk(tmp_path / "disk", "2m") as disk:
        root = _project(make_project, root=disk / "proj", notify={"webhook": server.url("/hook")})
        code = "DISK_FULL" if damage == "full" else "PATH_UNWRITABLE"
        with served(_croft_home):
            until_green(root)
            runs, rows = _runs(root), _rows(root)
            before = _last_tick(root)
            filler = fill(disk) if damage == "full" else None
            if damage == "read-only":
                remount(disk, "ro")
            # status names it too: as an error when it cannot even read the history, else as a warning
            seen = until_said(root, code)
            assert str(disk) in problem_of(seen, "doctor", code)["message"]
            wait_for(lambda: incidents.read(str(root.resolve())), "serve to record the incident")
            wait_for(lambda: server.requests_to("/hook"), "the webhook to be told")
            if filler is not None:
                filler.unlink()
            else:
                remount(disk, "rw")
            _resumes(root, before)
        [told] = server.requests_to("/hook")  # once per incident, however many ticks met it
        payload = told.json()
        assert payload["event"] == "scheduler" and payload["problems"][0]["code"] == code
        assert incidents.read(str(root.resolve())) is None  # the next good look cleared it
        assert (_runs(root), _rows(root)) == (runs, rows)


# -- slots.sqlite: rebuilt; the registry: restored; both ways of the registry checked ------------------------


def test_a_lost_registry_is_restored_and_a_lost_setting_is_named(make_project, _croft_home):
    root = _project(make_project)
    registry = _croft_home / "projects.json"
    with served(_croft_home) as serve:
        until_green(root)
        before = _last_tick(root)
        registry.write_bytes(b"")  # a 0-byte registry once meant "no projects", and doctor said ✔
        serve.next_ticks()
        assert json.loads(registry.read_text())[0]["root"] == str(root.resolve())
        assert (
            "restored 1 project(s) from its last good copy" in (_croft_home / "logs" / "tick.log").read_text()
        )
        _resumes(root, before)
        # the other way round: the registry lists it, its own setting is gone (its history reset)
        history = root / ".croft" / "runs.sqlite"
        shutil.copy(history, history.with_name("saved.sqlite"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{history}{suffix}").unlink(missing_ok=True)
    history.write_bytes(b"")
    seen = looks(root)
    assert all(any(p["code"] == "HISTORY_LOST" for p in e["problems"]) for _, e in seen.values()), seen
    assert seen["doctor"][0] == 1 and not seen["doctor"][1]["ok"]
    assert problem_of(seen, "doctor", "HISTORY_LOST")["details"]["cause"] == "setting_lost"


def test_a_heartbeat_far_ahead_of_the_clock_no_longer_hides_a_stopped_scheduler(make_project, _croft_home):
    """A tick stamped far ahead (a clock set back since, a bad CROFT_NOW) once kept SCHEDULER_STALE away
    forever. Now a mark more than 5 minutes ahead counts for nothing: with nothing ticking, every view says
    so (naming what stopped: here serve is not running); once ticks come, the fresh beat wins, and the
    clock having moved back is said (CLOCK_MOVED_BACK), not hidden."""
    root = _project(make_project, on_at=to_iso(datetime.now(UTC) - timedelta(minutes=10)))
    conn = open_history(root / ".croft")
    write_tick(conn, current(), "2099-01-01T00:00:00.000Z")  # as a tick at that clock leaves it
    release_tick(conn, current())
    conn.close()
    write_user_beats(str(_croft_home), "2099-01-01T00:00:00.000Z", [str(root.resolve())])
    seen = looks(root)
    stale = [p for name, (_, e) in seen.items() for p in e["problems"] if p["code"] == "SCHEDULER_STALE"]
    assert len(stale) == 2, seen  # status and schedule status warn
    assert "2099-01-01" in stale[0]["message"] and "ahead of the clock" in stale[0]["message"]
    assert stale[0]["details"]["cause"] == "serve_not_running"  # the real reason nothing ticks
    assert seen["doctor"][0] == 1
    with served(_croft_home):
        # the project ticks at the real time again; the mark ahead is outweighed, and the tick that found
        # it said the clock moved back: every view shows that notice (a warning) instead of staleness
        seen = wait_for(
            lambda: (lambda s: s if every_view_names(s, "CLOCK_MOVED_BACK") else None)(looks(root)),
            "the clock moving back named in every view",
        )
        assert all(code == 0 for code, _ in seen.values()), seen
        assert not [p for _, e in seen.values() for p in e["problems"] if p["code"] == "SCHEDULER_STALE"]
        assert "2099-01-01" in problem_of(seen, "doctor", "CLOCK_MOVED_BACK")["message"]
    beats = json.loads((_croft_home / "idle-beats.json").read_text())
    assert beats["at"] == "2099-01-01T00:00:00.000Z"  # still there, ignored


def test_a_croft_json_that_no_longer_loads_is_named_by_the_tick_too(make_project, _croft_home):
    """keepDays 999999 once passed validate and broke every run; now croft.json refuses it, and a project
    that is on but cannot load is an incident doctor names, not a quiet stop."""
    root = _project(make_project)
    config = root / "croft.json"
    good = config.read_text()
    with served(_croft_home):
        until_green(root)
        config.write_text(json.dumps({"timezone": "UTC", "history": {"keepDays": 999999}}))
        seen = until_said(root, "CONFIG_INVALID", status_fails=True)
        assert problem_of(seen, "doctor", "CONFIG_INVALID")["details"]["cause"] == "tick_failing"
        before = _last_tick(root)
        config.write_text(good)
        _resumes(root, before)


# -- croft tick --all: an unreadable history is a problem with its fix, told once per incident ------------


def test_tick_all_names_an_unreadable_history_and_tells_it_once(make_project, _croft_home, server):
    server.route("POST", "/hook", server.reply(204))
    root = make_project({"assets/orders.py": YEARLY}, notify={"webhook": server.url("/hook")})
    assert croft(root, "run")[0] == 0
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", datetime.now(UTC), via="os-job")
    conn.close()
    Registry().add(root, "os-job", datetime.now(UTC))
    history = root / ".croft" / "runs.sqlite"
    good = history.read_bytes()
    history.write_bytes(os.urandom(8192))  # garbage: once "scheduling is off", ok: true
    for _ in range(3):  # three minutes of the OS job
        code, envelope = croft(root, "tick", "--all")
        assert code == 2 and not envelope["ok"]
        [bad] = envelope["problems"]
        assert bad["code"] == "HISTORY_CORRUPT" and bad["details"]["root"] == str(root.resolve())
        assert bad["fix"]["command"].startswith("mv ") and envelope["data"]["started"] == []
    [told] = server.requests_to("/hook")  # once per incident, desktop and webhook as for a failed run
    assert told.json()["event"] == "scheduler" and told.json()["problems"][0]["code"] == "HISTORY_CORRUPT"
    desktop = [
        json.loads(line)
        for line in (root / ".croft" / "logs" / "notifications.ndjson").read_text().splitlines()
        if '"kind": "desktop"' in line and '"event": "scheduler"' in line
    ]
    assert len(desktop) == 1 and "HISTORY_CORRUPT" in desktop[0]["body"]
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert log.count("not ticked: HISTORY_CORRUPT") == 1
    history.write_bytes(good)  # the cause goes (a backup put back): the next minute ticks it again
    code, envelope = croft(root, "tick", "--all")
    assert code == 0 and [s["root"] for s in envelope["data"]["started"]] == [str(root.resolve())]
    assert incidents.read(str(root.resolve())) is None


# -- every command on a full or read-only disk: the machine's problem, named, never "a bug in croft" -------

COMMANDS = [
    ["validate"],
    ["run"],
    ["run", "orders"],
    ["preview", "orders"],
    ["status"],
    ["logs"],
    ["logs", "orders"],
    ["schedule", "status"],
    ["schedule", "pause", "--for", "1h"],
    ["schedule", "on", "--no-os-job"],
    ["schedule", "off"],
    ["tick"],
    ["tick", "--all"],
    ["doctor"],
    ["notify", "test"],
    ["init", "fresh"],
]


@pytest.mark.parametrize("home_too", [False, True], ids=["project-disk", "home-on-it-too"])
@pytest.mark.parametrize("damage", ["full", "read-only"])
def test_every_command_on_a_full_or_read_only_disk_names_it_without_a_crash_file(
    make_project, tmp_path, monkeypatch, damage, home_too
):
    with small_disk(tmp_path / "disk", "2m") as disk:
        if home_too:
            monkeypatch.setenv("CROFT_HOME", str(disk / "home"))
        root = _project(make_project, root=disk / "proj")
        cache = tmp_path / "cache"
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))  # where a crash file outside a project would go
        if damage == "full":
            fill(disk)
        else:
            remount(disk, "ro")
        try:
            said = {}
            for argv in COMMANDS:
                code, envelope = croft(root, *argv)  # no traceback, no INTERNAL_ERROR (brokenkit.croft)
                codes = {p["code"] for p in envelope["problems"] if p["severity"] == "error"}
                said[" ".join(argv)] = (code, sorted(codes))
                allowed = {"DISK_FULL", "PATH_UNWRITABLE"} | (
                    {"SCHEDULER_BROKEN"} if argv == ["doctor"] else set()
                )
                assert codes <= allowed, (argv, envelope["problems"])  # doctor: no serve runs here, too
                for p in envelope["problems"]:
                    if p["code"] in ("DISK_FULL", "PATH_UNWRITABLE"):
                        assert str(disk) in p["message"], (argv, p["message"])
            writes = [k for k in said if k.split()[0] in ("run", "preview") or k == "tick"]
            if home_too:
                writes.append("tick --all")  # its own home cannot take its log, its slots: it says so
            assert all(said[k][0] != 0 for k in writes), [(k, said[k]) for k in writes]  # each said why
            crashes = [
                *cache.rglob("crash-*"),
                *disk.rglob("crash-*"),
                *Path("/tmp/croft-crashes").glob(f"*-{os.getpid()}*"),
            ]
            assert crashes == [], crashes
        finally:
            if damage == "read-only":
                remount(disk, "rw")
