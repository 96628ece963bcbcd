"""Agents propose, people approve: a run or preview with CROFT_AGENT=1 does its work, approves no code for
the scheduler, says what the person runs, and the history says who started each run."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner
from enginekit import croft, history, table

from croft.cli.group import build_group

ITEMS = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
"""

AGENT = {"CROFT_AGENT": "1"}


def _approved(root: Path, asset: str) -> str | None:
    rows = history(root, "SELECT approved_code_hash FROM schedule_state WHERE asset = ?", asset)
    return rows[0]["approved_code_hash"] if rows else None


def _status_row(root: Path, asset: str) -> dict:
    code, envelope = croft(root, "status")
    assert code == 0, envelope
    return next(a for a in envelope["data"]["assets"] if a["asset"] == asset)


def _hold(root: Path, asset: str) -> dict | None:
    return _status_row(root, asset)["schedule"]["hold"]


def test_an_agents_run_builds_the_asset_but_leaves_it_held(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    code, envelope = croft(root, "run", "items", env=AGENT)
    assert code == 0 and envelope["ok"], envelope
    assert [r["n"] for r in table(root, "items")] == [1, 2]
    assert envelope["data"]["startedBy"] == "agent"
    assert envelope["data"]["awaitingPerson"] == ["items"]
    assert _approved(root, "items") is None
    assert history(root, "SELECT trigger, human FROM runs") == [{"trigger": "agent", "human": 0}]
    # the answer names what the person runs, and the hold the next tick keeps
    assert {"command": "croft run items", "reason": envelope["next"][0]["reason"]} in envelope["next"]
    held = [p for p in envelope["problems"] if p["code"] == "SCHEDULE_HELD"]
    assert held and held[0]["severity"] == "info" and "croft run items" in held[0]["hint"]
    assert _hold(root, "items")["code"] == "SCHEDULE_HELD"
    assert _status_row(root, "items")["lastRun"]["startedBy"] == "agent"  # what the page's row shows


def test_a_persons_run_after_it_releases_the_asset(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    croft(root, "run", "items", env=AGENT)
    code, envelope = croft(root, "run", "items")
    assert code == 0, envelope
    assert envelope["data"]["startedBy"] == "person" and "awaitingPerson" not in envelope["data"]
    assert _approved(root, "items") is not None
    assert _hold(root, "items") is None
    assert _status_row(root, "items")["lastRun"]["startedBy"] == "person"
    # an agent running the code a person already ran has nothing to wait for
    code, envelope = croft(root, "run", "items", env=AGENT)
    assert envelope["data"]["awaitingPerson"] == []
    assert not [p for p in envelope["problems"] if p["code"] == "SCHEDULE_HELD"]


def test_an_agents_preview_approves_nothing_and_a_persons_does(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    code, envelope = croft(root, "preview", "items", env=AGENT)
    assert code == 0, envelope
    assert envelope["data"]["awaitingPerson"] == ["items"]
    assert _approved(root, "items") is None
    croft(root, "preview", "items")
    assert _approved(root, "items") is not None


def test_CROFT_AGENT_0_is_a_person(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    croft(root, "run", "items", env={"CROFT_AGENT": "0"})
    assert _approved(root, "items") is not None


def test_logs_say_who_started_each_run(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    croft(root, "run", "items", env=AGENT)
    croft(root, "run", "items")
    code, envelope = croft(root, "logs", "--runs")
    assert code == 0, envelope
    assert [r["startedBy"] for r in envelope["data"]["runs"]] == ["person", "agent"]
    code, envelope = croft(root, "logs", "items")
    assert [s["startedBy"] for s in envelope["data"]["steps"]] == ["person", "agent"]
    old = Path.cwd()
    try:
        os.chdir(root)
        text = CliRunner().invoke(build_group(), ["logs", "--runs"]).stdout
    finally:
        os.chdir(old)
    person_line, agent_line = [line for line in text.splitlines() if " succeeded " in line]
    # (the argv after the words is the test runner's own here: in-process runs record sys.argv)
    assert "by an agent" in agent_line and "by hand" in person_line and "by hand" not in agent_line
