"""Jitter through the real tick on a moved clock: two machines (two homes, two copies of a project) start
each fire of the same asset at the same minute, the one its hash gives, and across the night London's
clocks go back every fire of the repeated hour keeps its own wait, short of the next fire."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from schedulekit import croft_json, query, schedule_on, wait_for_runs

from croft.core.clock import parse_instant, to_iso
from croft.project.config import load_project
from croft.schedule.jitter import jitter_delay
from croft.scheduler.tick.project_tick import project_tick

pytestmark = pytest.mark.processes

SPREAD = """
from croft import ingest


@ingest(schedule="every 30 minutes", key="id", jitter="25m")
def rows(ctx):
    yield [{"id": 1}]
"""
START = parse_instant("2026-10-24T23:50:00Z")  # 00:50 BST; at 01:00Z (02:00 BST) it is 01:00 GMT again


def _machine(make_project, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # type: ignore[no-untyped-def]
    home = tmp_path / f"home-{name}"
    home.mkdir()
    monkeypatch.setenv("CROFT_HOME", str(home))
    root = make_project({"assets/spread.py": SPREAD}, root=tmp_path / f"machine-{name}")
    assert croft_json(root, "2026-10-24T23:45:00Z", "run")[0] == 0
    schedule_on(root, "2026-10-24T23:45:00Z")
    project = load_project(root)
    for minute in range(140):
        now = START + timedelta(minutes=minute)
        monkeypatch.setenv("CROFT_NOW", to_iso(now))
        data, _ = project_tick(project, now, ping=False)
        if data["spawned"]:
            wait_for_runs(root)
    rows = query(root, "SELECT started_at FROM runs WHERE trigger = 'schedule' ORDER BY started_at")
    return [r["started_at"] for r in rows]


def test_two_machines_start_each_jittered_fire_at_the_same_minute_across_a_dst_change(
    make_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    one = _machine(make_project, tmp_path, "one", monkeypatch)
    two = _machine(make_project, tmp_path, "two", monkeypatch)
    assert one == two
    # the repeated hour's fires, 00:00 to 01:30 UTC: 01:00 and 01:30 BST, then 01:00 and 01:30 GMT (the
    # 02:00 GMT fire's release comes after the last tick, 02:09)
    fires = [parse_instant("2026-10-25T00:00:00Z") + timedelta(minutes=30 * i) for i in range(4)]
    expected = []
    for fire in fires:
        delay = jitter_delay("spread", fire, 25 * 60, fire + timedelta(minutes=30))
        assert timedelta(0) <= delay < timedelta(minutes=25)
        at = fire + delay
        tick = at.replace(second=0, microsecond=0)
        expected.append(to_iso(tick if tick == at else tick + timedelta(minutes=1)))
    assert one == expected
    assert all(parse_instant(s) < f + timedelta(minutes=30) for s, f in zip(one, fires, strict=True))
