"""`croft.dagster.definitions` hands a croft project to Dagster: its assets with the same inputs, its
schedules with croft's cron and zone, its promises as freshness checks; Dagster's own `materialize` runs
croft's engine (rows in the warehouse, runs in croft's history), and code no person ran stays held."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from enginekit import croft, history, table

from croft.core.paths import data_path
from croft.dagster import definitions

INGEST = """
import json
from pathlib import Path

from croft import ingest


@ingest(schedule="every day at 07:30", key="id", fresh_within="1 day")
def rows(ctx):
    yield json.loads((Path(__file__).parent.parent / "data.json").read_text())
"""
FILES = {
    "assets/orders.py": INGEST,
    "assets/doubled.sql": "-- key: id\nSELECT id, v * 2 AS w FROM orders\n",
    "assets/summary.sql": "SELECT count(*) AS n, sum(w) AS total FROM doubled\n",
}


def _data(root: Path, values: list[int]) -> None:
    (root / "data.json").write_text(json.dumps([{"id": i + 1, "v": v} for i, v in enumerate(values)]))


@pytest.fixture
def project(make_project) -> Path:
    """An ingest and two transforms, approved by one run by hand; then the source grows a row."""
    root = make_project(FILES, timezone="Europe/Berlin")
    _data(root, [10, 20])
    assert croft(root, "run")[0] == 0
    _data(root, [10, 20, 30])
    return root


@pytest.fixture
def instance():
    """A Dagster instance of the test's own (its storage in a temporary folder it removes)."""
    with dg.instance_for_test() as made:
        yield made


def _failure(result: dg.ExecuteInProcessResult) -> str:
    (event,) = result.get_step_failure_events()
    data = event.step_failure_data
    return (data.user_failure_data.description if data.user_failure_data else None) or data.error.message


def test_dagster_materializes_all_three_through_crofts_engine(project, instance):
    defs = definitions(project)
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == {"orders", "doubled", "summary"}
    assert graph.get(dg.AssetKey("doubled")).parent_keys == {dg.AssetKey("orders")}
    assert graph.get(dg.AssetKey("summary")).parent_keys == {dg.AssetKey("doubled")}
    assert graph.get(dg.AssetKey("orders")).parent_keys == set()

    result = dg.materialize(list(defs.assets), instance=instance)
    assert result.success
    # the rows are in croft's warehouse: the third source row went through both transforms
    assert [r["w"] for r in table(project, "doubled")] == [20, 40, 60]
    assert [(r["n"], r["total"]) for r in table(project, "summary")] == [(3, 120)]
    # the runs are in croft's history, as Dagster's (not a person's), one per asset, each succeeded
    runs = history(
        project, "SELECT id, trigger, human, status FROM runs WHERE trigger = 'dagster' ORDER BY id"
    )
    assert [(r["human"], r["status"]) for r in runs] == [(0, "succeeded")] * 3
    steps = history(
        project,
        "SELECT run_id, asset, status FROM steps WHERE run_id IN (?, ?, ?)",
        *[r["id"] for r in runs],
    )
    assert sorted((s["asset"], s["status"]) for s in steps) == [
        ("doubled", "ok"),
        ("orders", "ok"),
        ("summary", "ok"),
    ]
    # rows as Dagster metadata, naming croft's run
    meta = {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    assert meta["orders"]["dagster/row_count"].value == 3 and meta["orders"]["croft/rows_added"].value == 1
    assert meta["summary"]["dagster/row_count"].value == 1
    assert {m["croft/run_id"].value for m in meta.values()} == {r["id"] for r in runs}
    # croft logs tells them apart from a person's runs
    code, logs = croft(project, "logs", "--runs")
    assert code == 0
    assert [r["trigger"] for r in logs["data"]["runs"]] == ["dagster"] * 3 + ["manual"]
    # croft status agrees: nothing stale after Dagster's runs
    status = croft(project, "status")[1]["data"]
    assert not any(a["stale"] for a in status["assets"])


def test_the_schedule_is_crofts_cron_in_the_projects_zone(project):
    defs = definitions(project)
    status = croft(project, "status")[1]["data"]
    cron = {a["asset"]: a["schedule"]["cron"] for a in status["assets"] if a["schedule"]["cron"]}
    schedules = {s.name: s for s in defs.schedules}
    assert set(schedules) == {f"{name}_schedule" for name in cron} == {"orders_schedule"}
    schedule = schedules["orders_schedule"]
    assert schedule.cron_schedule == cron["orders"] == "30 7 * * *"
    assert schedule.execution_timezone == status["scheduling"]["timezone"] == "Europe/Berlin"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert (
        definitions(project, start_schedules=True).schedules[0].default_status
        == dg.DefaultScheduleStatus.RUNNING
    )


def test_the_freshness_promise_is_a_policy_and_a_check_judged_as_croft_judges_it(
    project, monkeypatch, instance
):
    defs = definitions(project)
    orders = next(a for a in defs.assets if a.key == dg.AssetKey("orders"))
    policy = orders.specs_by_key[dg.AssetKey("orders")].freshness_policy
    assert policy is not None and policy.fail_window.to_timedelta().total_seconds() == 86400
    (check,) = defs.asset_checks
    assert {(k.asset_key, k.name) for k in check.check_keys} == {
        (dg.AssetKey("orders"), "croft_fresh_within")
    }
    # two days on, croft's status says the promise is broken, and so does the check
    monkeypatch.setenv("CROFT_NOW", "2030-01-01T00:00:00Z")
    look = croft(project, "status")[1]["data"]["freshness"]["orders"]
    assert look["breached"]
    result = dg.materialize(
        [*defs.assets, check], selection=dg.AssetSelection.checks(check), instance=instance
    )
    (evaluation,) = result.get_asset_check_evaluations()
    assert not evaluation.passed
    assert evaluation.metadata["croft/age_seconds"].value == look["ageSeconds"]


def test_a_held_asset_fails_with_schedule_held_and_the_command_that_releases_it(project, instance):
    before = table(project, "orders")
    path = project / "assets" / "orders.py"
    path.write_text(INGEST.replace('key="id"', 'key="id", retries=1'))  # a real change nobody has run
    defs = definitions(project)
    result = dg.materialize(list(defs.assets), selection=["orders"], instance=instance, raise_on_error=False)
    assert not result.success
    said = _failure(result)
    assert "SCHEDULE_HELD" in said and "`croft run orders`" in said, said
    assert table(project, "orders") == before  # nothing ran
    (run,) = history(project, "SELECT id, status FROM runs WHERE trigger = 'dagster'")
    assert history(project, "SELECT * FROM steps WHERE run_id = ?", run["id"]) == []  # held: no attempt
    # the command it names releases it: a person runs it, and Dagster may run it again
    assert croft(project, "run", "orders")[0] == 0
    again = dg.materialize(list(defs.assets), selection=["orders"], instance=instance)
    assert again.success


def test_a_new_project_nobody_ran_is_held_whole(make_project, instance):
    root = make_project(FILES, timezone="Europe/Berlin")
    _data(root, [1])
    defs = definitions(root)
    result = dg.materialize(list(defs.assets), instance=instance, raise_on_error=False)
    assert not result.success
    assert "SCHEDULE_HELD" in _failure(result)
    assert not (root / "warehouse.sqlite").exists() or history(root, "SELECT * FROM steps") == []


@pytest.mark.processes
def test_the_guides_defs_file_loads_in_dagsters_own_cli(project, tmp_path):
    """The `defs.py` docs/server.md tells a reader to write, loaded by `dagster definitions validate` (the
    loader `dagster dev` uses), from the project folder."""
    guide = data_path("docs", "server.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", guide, re.S)
    assert "croft.dagster import definitions" in code
    (project / "defs.py").write_text(code)
    home = tmp_path / "dagster-home"
    home.mkdir()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-f", "defs.py"],
        cwd=project,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation successful" in done.stdout + done.stderr
