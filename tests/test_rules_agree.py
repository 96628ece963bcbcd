"""validate and run agree: one bad asset per static rule (generated from the rule table), refused by both."""

from __future__ import annotations

import sqlite3

import pytest
from enginekit import croft

from croft.project.rules import RULES, Rule


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_static_rule_is_reported_by_validate_and_refused_by_run(rule: Rule, make_project):
    root = make_project({f"assets/{rule.file}": rule.text})
    name = rule.file.rsplit(".", 1)[0]

    code, validated = croft(root, "validate")
    assert code == 2 and validated["ok"] is False
    assert rule.code in {p["code"] for p in validated["problems"]}, validated["problems"]

    code, ran = croft(root, "run")
    assert code == 2 and ran["ok"] is False
    run_codes = {p["code"] for p in ran["problems"]}
    assert rule.code in run_codes, ran["problems"]
    warehouse = root / "warehouse.sqlite"
    if warehouse.exists():  # nothing of the bad asset was written
        conn = sqlite3.connect(warehouse)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        conn.close()
        assert name not in tables


def test_the_table_covers_the_rules_the_issue_names():
    names = {r.name for r in RULES}
    for wanted in (
        "name starts with sqlite_",
        "async def asset",
        "lookback is not a duration",
        "bare decorator",
    ):
        assert wanted in names


SECRET_INGEST = """
from croft import ingest


@ingest(key="id", secrets=["API_KEY"])
def rows(ctx):
    yield {"id": 1, "k": len(ctx.secret("API_KEY"))}
"""


def test_a_secret_run_would_miss_is_a_validate_warning(make_project, monkeypatch):
    monkeypatch.delenv("API_KEY", raising=False)
    root = make_project({"assets/keyed.py": SECRET_INGEST})
    code, validated = croft(root, "validate")
    assert code == 0 and validated["ok"] is True
    [warning] = [p for p in validated["problems"] if p["code"] == "SECRET_MISSING"]
    assert warning["severity"] == "warning" and "API_KEY" in warning["message"]
    code, ran = croft(root, "run")
    assert code == 2 and "SECRET_MISSING" in {p["code"] for p in ran["problems"]}

    (root / ".env").write_text("API_KEY=abcdef\n")
    code, validated = croft(root, "validate")
    assert code == 0 and not [p for p in validated["problems"] if p["code"] == "SECRET_MISSING"]
