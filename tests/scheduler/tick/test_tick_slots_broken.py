"""slots.sqlite is state croft can rebuild: garbage or a damaged file is moved aside (said once in the tick
log) and scheduling goes on the same tick; where it cannot be rebuilt (croft's home takes no new file),
the tick fails loudly and every view names why, instead of a heartbeat that claims health."""

from __future__ import annotations

import os

import pytest
from brokenkit import croft, looks, owner_only
from schedulekit import ISSUES, croft_json, schedule_on, wait_for_runs

pytestmark = pytest.mark.processes

T0 = "2026-06-01T10:05:00Z"


def _due_project(make_project, name: str):  # type: ignore[no-untyped-def]
    root = make_project({"assets/issues.py": ISSUES.format(schedule="every hour")}, root=None)
    root = root.rename(root.with_name(name))
    assert croft_json(root, "2026-06-01T09:30:00Z", "run")[0] == 0
    schedule_on(root, "2026-06-01T09:30:00Z")
    return root


def test_a_garbage_slots_file_is_moved_aside_once_and_the_due_runs_start(make_project, _croft_home):
    first, second = _due_project(make_project, "a"), _due_project(make_project, "b")
    garbage = os.urandom(4096)
    (_croft_home / "slots.sqlite").write_bytes(garbage)
    code, ticked = croft_json(first, T0, "tick")
    assert code == 0 and [s["assets"] for s in ticked["data"]["spawned"]] == [["issues"]]
    code, ticked = croft_json(second, T0, "tick")  # the rebuilt file serves the next tick as any other
    assert code == 0 and [s["assets"] for s in ticked["data"]["spawned"]] == [["issues"]]
    wait_for_runs(first)
    wait_for_runs(second)
    assert (_croft_home / "slots.sqlite.broken").read_bytes() == garbage  # kept, for whoever looks
    log = (_croft_home / "logs" / "tick.log").read_text()
    assert log.count("slots.sqlite could not be used (file is not a database)") == 1
    code, status = croft_json(first, T0, "status")
    assert code == 0 and not [p for p in status["problems"] if p["code"] != "SCHEDULE_HELD"]


def test_a_slots_file_that_cannot_be_rebuilt_stops_the_tick_loudly(make_project, _croft_home):
    prefix = owner_only()
    root = _due_project(make_project, "a")
    (_croft_home / "slots.sqlite").write_bytes(os.urandom(4096))
    (_croft_home / "logs").mkdir(exist_ok=True)
    _croft_home.chmod(0o555)  # croft's home takes no new file: the broken slots cannot be moved aside
    try:
        code, ticked = croft(root, "tick", prefix=prefix, CROFT_NOW=T0)
        assert code == 2 and ticked["problems"][0]["code"] == "PATH_UNWRITABLE"
        assert str(_croft_home) in ticked["problems"][0]["message"]
        seen = looks(root, prefix)
        for name, (_exit, envelope) in seen.items():
            assert "PATH_UNWRITABLE" in {p["code"] for p in envelope["problems"]}, (name, envelope)
        assert seen["doctor"][0] == 1 and seen["schedule status"][0] != 0
    finally:
        _croft_home.chmod(0o755)
    code, ticked = croft(root, "tick", prefix=prefix, CROFT_NOW=T0)
    assert code == 0 and [s["assets"] for s in ticked["data"]["spawned"]] == [["issues"]]
    wait_for_runs(root)
