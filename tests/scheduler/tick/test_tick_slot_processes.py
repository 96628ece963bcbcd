"""The cap and the pools count processes: sampled from /proc, never more `croft run --due` processes alive
than the cap, nor more of a pool's runs than its size, while a backlog drains by hand-over alone.

Each scheduled run here is short, so most of its life is the hand-over: the run that ends ticks the next
project and starts its run, which must not begin before the ending run has exited. A sampler reads every
process's command line from /proc every few milliseconds.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest
from processkit import due_runs
from schedulekit import croft_json, query, schedule_on, tick, wait_for_runs
from waiting import wait_for

from croft.core.clock import parse_instant

pytestmark = pytest.mark.processes

T0 = "2026-06-01T10:05:00Z"
SHORT = """
from croft import ingest


@ingest(schedule="0 {hour} * * *", key="id"{pool})
def {name}(ctx):
    import os
    import time

    waited = 0.0
    while os.path.exists("hold") and waited < 60:  # a scheduled run starts in the project folder
        time.sleep(0.05)
        waited += 0.05
    yield [{{"id": 1}}]
"""


class Sampler:
    """The most `croft run --due` processes of this test's projects (under ``base``) seen alive at once,
    and of those in ``pool_roots``. (Other tests on the machine may run scheduled runs of their own.)"""

    def __init__(self, base: Path, pool_roots: set[str] | None = None) -> None:
        self.most = 0
        self.most_in_pool = 0
        self.samples = 0
        self.seen: list[list[tuple[int, str]]] = []
        self._base = str(base) + os.sep
        self._pool = pool_roots or set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            alive = [(pid, cwd) for pid, cwd in due_runs() if cwd.startswith(self._base)]
            self.samples += 1
            if len(alive) > 2:
                self.seen.append(alive)
            self.most = max(self.most, len(alive))
            self.most_in_pool = max(self.most_in_pool, sum(1 for _, cwd in alive if cwd in self._pool))
            self._stop.wait(0.003)


def _projects(make_project, tmp_path: Path, count: int, groups: int, pool: str | None = None) -> list[Path]:
    roots = []
    for p in range(count):
        files = {
            f"assets/f{p}_{g}.py": SHORT.format(
                hour=g + 1, name=f"f{p}_{g}", pool=f', pool="{pool}"' if pool else ""
            )
            for g in range(groups)
        }
        extra = {"pools": {pool: 1}} if pool else {}
        root = make_project(files, root=tmp_path / f"p{p}", **extra)
        code, envelope = croft_json(root, "2026-05-31T23:30:00Z", "run")  # by hand: approves the code
        assert code == 0, envelope
        schedule_on(root, "2026-05-31T23:30:00Z")
        roots.append(root)
    return roots


def _scheduled(root: Path) -> list[dict]:
    return query(root, "SELECT id, argv, status FROM runs WHERE trigger = 'schedule'")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads live processes from /proc")
def test_a_backlog_of_forty_groups_never_has_more_run_processes_alive_than_the_cap(
    make_project, tmp_path, _croft_home
):
    """Forty due groups in four projects, a cap of 2, one tick each: every group runs once, started by
    the runs that end (no later tick comes), and no sample ever sees three `croft run --due` alive."""
    roots = _projects(make_project, tmp_path, 4, 10)
    with Sampler(tmp_path) as sampler:
        for root in roots:
            tick(root, T0, wait=False, CROFT_MAX_SCHEDULED_RUNS="2")
        wait_for(
            lambda: sum(len(_scheduled(r)) for r in roots) == 40,
            lambda: f"all forty groups to start: {[len(_scheduled(r)) for r in roots]}",
            timeout=240,
        )
        for root in roots:
            wait_for_runs(root)
    for p, root in enumerate(roots):
        runs = _scheduled(root)
        assert sorted(json.loads(r["argv"])[-1] for r in runs) == sorted(f"f{p}_{g}" for g in range(10))
        assert {r["status"] for r in runs} == {"succeeded"}
    assert sampler.samples > 100
    assert sampler.most == 2, (
        f"at most {sampler.most} croft run --due alive in {sampler.samples} samples: {sampler.seen[:3]}"
    )
    # every slot left free: nothing holds one once the runs are gone
    from croft.scheduler.tick.slotlocks import CAP, count_held

    assert count_held(_croft_home, CAP) == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads live processes from /proc")
def test_a_pool_of_one_never_lets_two_of_its_runs_overlap_across_projects(
    make_project, tmp_path, _croft_home
):
    """Two projects whose ingests all name pool "stripe" (size 1), with a cap of 3: one pool run at a
    time, in fire order, the rest shown waiting for the pool; runs outside the pool go ahead meanwhile."""
    pooled = _projects(make_project, tmp_path, 2, 4, pool="stripe")
    free = make_project(
        {f"assets/g{g}.py": SHORT.format(hour=g + 1, name=f"g{g}", pool="") for g in range(3)},
        root=tmp_path / "free",
    )
    assert croft_json(free, "2026-05-31T23:30:00Z", "run")[0] == 0
    schedule_on(free, "2026-05-31T23:30:00Z")
    knobs = {"CROFT_MAX_SCHEDULED_RUNS": "3"}
    for root in pooled:
        (root / "hold").touch()  # the pool's runs stay alive while the test looks
    with Sampler(tmp_path, {str(r) for r in pooled}) as sampler:
        first = tick(pooled[0], T0, wait=False, **knobs)
        second = tick(pooled[1], T0, wait=False, **knobs)
        assert len(first["spawned"]) == 1 and second["spawned"] == []
        waiting = [h for h in second["held"] if h["code"] == "ASSET_BUSY"]
        assert len(waiting) == 4 and all("waiting for pool stripe" in h["message"] for h in waiting), waiting
        _, status = croft_json(pooled[1], T0, "schedule", "status", **knobs)
        queue = status["data"]["queue"]
        assert {w["waitingFor"] for w in queue["waiting"]} == {"pool stripe"}
        assert "pool stripe: " in queue["text"]
        _, looked = croft_json(pooled[1], T0, "status", **knobs)  # waiting, not failing nor stale for it
        assert {a["asset"]: a.get("waitingFor") for a in looked["data"]["assets"]} == {
            f"f1_{g}": "pool stripe" for g in range(4)
        }
        from croft.ui.derived import derived_state

        shown = derived_state(
            looked["data"]["assets"][0], queue["waiting"], str(pooled[1]), parse_instant(T0)
        )
        assert shown["label"] == "waiting for pool stripe", shown
        # the project outside the pool is not held back by it: its three start at once (cap 3, 1 taken)
        others = tick(free, T0, wait=False, **knobs)
        assert len(others["spawned"]) == 2
        for root in pooled:
            (root / "hold").unlink()
        wait_for(
            lambda: sum(len(_scheduled(r)) for r in pooled) == 8,
            lambda: f"all eight pool runs to start: {[len(_scheduled(r)) for r in pooled]}",
            timeout=240,
        )
        for root in [*pooled, free]:
            wait_for_runs(root)
    pool_runs = [r for root in pooled for r in _scheduled(root)]
    assert len(pool_runs) == 8 and {r["status"] for r in pool_runs} == {"succeeded"}
    assert sampler.most_in_pool == 1, f"{sampler.most_in_pool} runs of the pool alive at once"
    assert sampler.most <= 3


def test_an_asset_naming_a_pool_croft_json_does_not_size_is_held_by_the_tick_with_the_fix(
    make_project, tmp_path
):
    """The one rule (``rules.pool_in_config``) validate and run apply: the tick holds the asset, starts
    nothing of it, and says which line of croft.json to add."""
    root = make_project(
        {"assets/f.py": SHORT.format(hour=1, name="f", pool=', pool="stripe"')}, root=tmp_path / "u"
    )
    code, ran = croft_json(root, "2026-05-31T23:30:00Z", "run")
    assert code == 2 and "CONFIG_INVALID" in {p["code"] for p in ran["problems"]}
    (root / "croft.json").write_text(json.dumps({"timezone": "Europe/London", "pools": {"stripe": 1}}))
    assert croft_json(root, "2026-05-31T23:30:00Z", "run")[0] == 0  # sized: a person's run approves it
    schedule_on(root, "2026-05-31T23:30:00Z")
    (root / "croft.json").write_text(json.dumps({"timezone": "Europe/London"}))  # the pool's size gone
    data = tick(root, T0)
    assert data["spawned"] == []
    held = [h for h in data["held"] if h["asset"] == "f"]
    assert held and held[0]["code"] == "CONFIG_INVALID" and '"pools": {"stripe": 1}' in held[0]["hint"], held
    code, validated = croft_json(root, T0, "validate")
    assert code == 2 and "CONFIG_INVALID" in {p["code"] for p in validated["problems"]}
