"""validate, status, logs and docs through the CLI: one envelope each, and the contents people rely on."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from enginekit import croft

from croft.cli.group import COMMANDS, build_group
from croft.core.paths import data_path

OFFLINE = """
from croft import ingest


@ingest(schedule="weekdays at 9am", key="id")
def rows(ctx):
    yield [{"id": 1, "v": 2}]
"""

BROKEN = """
from croft import ingest

EVERY = "every hour"


@ingest(schedule=EVERY)
def rows(ctx):
    yield {"id": 1}
"""


@pytest.fixture
def project(make_project, monkeypatch):
    monkeypatch.setenv(
        "CROFT_NOW", "2026-03-06T12:00:00Z"
    )  # a Friday, 07:00 in New York; EDT starts on the 8th
    return make_project(
        {"assets/items.py": OFFLINE, "assets/totals.sql": "SELECT count(*) AS n, sum(v) AS v FROM items\n"},
        timezone="America/New_York",
    )


def test_validate_shows_the_cron_and_the_next_three_fires_in_the_project_zone(project):
    code, out = croft(project, "validate")
    assert code == 0 and out["ok"]
    items = next(a for a in out["data"]["assets"] if a["name"] == "items")
    assert items["schedule"] == {
        "text": "weekdays at 9am",
        "cron": "0 9 * * 1-5",
        "next": ["2026-03-06T09:00:00-05:00", "2026-03-09T09:00:00-04:00", "2026-03-10T09:00:00-04:00"],
    }
    assert out["data"]["order"] == ["items", "totals"]
    totals = next(a for a in out["data"]["assets"] if a["name"] == "totals")
    assert totals["kind"] == "sql" and totals["inputs"] == ["items"]


def test_validate_exits_2_on_a_non_literal_schedule_naming_the_line(make_project):
    root = make_project({"assets/items.py": BROKEN})
    code, out = croft(root, "validate")
    assert code == 2 and not out["ok"]
    problem = out["problems"][0]
    assert problem["code"] == "ASSET_INVALID" and problem["line"] == 6


def test_validate_refuses_a_bad_schedule_with_a_suggestion(make_project):
    root = make_project({"assets/items.py": OFFLINE.replace("weekdays at 9am", "every 7 minutes")})
    code, out = croft(root, "validate")
    assert code == 2
    problem = out["problems"][0]
    assert problem["code"] == "SCHEDULE_INVALID" and problem["asset"] == "items" and problem["suggestion"]


def test_status_says_never_run_then_fresh_and_logs_lists_runs_newest_first(project):
    _, before = croft(project, "status")
    assert [a["lastRun"] for a in before["data"]["assets"]] == [None, None]
    assert all(a["stale"] for a in before["data"]["assets"])
    assert croft(project, "run")[0] == 0
    _, after = croft(project, "status")
    assert [(a["asset"], a["rows"], a["stale"], a["lastRun"]["status"]) for a in after["data"]["assets"]] == [
        ("items", 1, False, "ok"),
        ("totals", 1, False, "ok"),
    ]
    assert croft(project, "run", "items")[0] == 0
    _, runs = croft(project, "logs", "--runs")
    assert [len(r["steps"]) for r in runs["data"]["runs"]] == [1, 2]
    assert all(r["trigger"] == "manual" and r["human"] for r in runs["data"]["runs"])
    _, one = croft(project, "logs", runs["data"]["runs"][1]["runId"])
    assert one["data"]["mode"] == "run" and one["data"]["run"]["runId"] == runs["data"]["runs"][1]["runId"]
    _, steps = croft(project, "logs", "items")
    assert [s["asset"] for s in steps["data"]["steps"]] == ["items", "items"]
    assert any("rows" in line or "fetching" in line for line in steps["data"]["steps"][0]["lines"])


def test_logs_failed_keeps_only_failures(make_project):
    root = make_project(
        {"assets/bad.py": OFFLINE.replace('yield [{"id": 1, "v": 2}]', "raise KeyError('x')")}
    )
    croft(root, "run")
    _, out = croft(root, "logs", "--failed")
    assert [(s["asset"], s["status"]) for s in out["data"]["steps"]] == [("bad", "failed")]
    assert out["data"]["steps"][0]["error"]["code"] == "ASSET_CODE_ERROR"


def test_logs_since_must_be_a_time(project):
    code, out = croft(project, "logs", "--since", "last tuesday")
    assert code == 2 and out["problems"][0]["code"] == "USAGE"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_and_a_section_in_the_docs(name):
    result = CliRunner().invoke(build_group(), [name, "--help"])
    assert result.exit_code == 0 and len(result.output) > 80
    commands = data_path("docs", "commands.md").read_text()
    assert re.search(rf"^## `croft {name}\b", commands, re.M), f"docs/commands.md has no section for {name}"


def test_every_problem_code_is_documented():
    from croft.core.problems import CODES

    text = data_path("docs", "errors.md").read_text()
    missing = [code for code in CODES if f"`{code}`" not in text]
    assert not missing


def test_docs_prints_a_topic_and_suggests_a_close_one(tmp_path):
    runner = CliRunner()
    listed = json.loads(runner.invoke(build_group(), ["docs", "--json"]).output)
    assert "scheduling" in [t["topic"] for t in listed["data"]["topics"]]
    page = runner.invoke(build_group(), ["docs", "scheduling"])
    assert (
        page.exit_code == 0 and page.output.strip() == data_path("docs", "scheduling.md").read_text().strip()
    )
    wrong = json.loads(runner.invoke(build_group(), ["docs", "schedulng", "--json"]).output)
    assert wrong["problems"][0]["suggestion"] == "scheduling"
