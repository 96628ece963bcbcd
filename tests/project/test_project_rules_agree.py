"""validate and run agree: one bad asset per static rule (generated from the rule table), refused by both."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from enginekit import croft
from hypothesis import given, settings
from hypothesis import strategies as st

from croft.core.problems import CroftError
from croft.engine.checks import parse_checks
from croft.engine.cursor import parse_lookback
from croft.engine.writespec import key_tuple, resolve_mode
from croft.project.facts import read_python_facts
from croft.project.rules import RULES, Rule, static_problems


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


# -- a property: whatever options an ingest is written with, if the engine's own last-moment checks would
# refuse them, croft validate has already reported an error with the same code.
KEYS = st.sampled_from([None, "id", ["a", "b"], "my id", '"id"', "id;drop", ["ok", "not ok"]])
WRITES = st.sampled_from([None, "replace", "append", "merge", "upsert"])
INCREMENTALS = st.sampled_from(
    [
        None,
        "t",
        {"field": "t", "lookback": "30 days"},
        {"field": "t", "lookback": "30 dayz"},
        {"field": "t", "lookback": "2h"},
    ]
)
CHECKS = st.lists(
    st.sampled_from(
        ["amount >= 0", "unique(id)", "(x > 0", "x > 0; drop", "min_rows(2)", "not_null(my col)"]
    ),
    max_size=3,
)


def engine_refusals(key, write, incremental, checks) -> set[str]:
    """The codes the engine's checks before a write would raise for these options."""
    codes: set[str] = set()
    field = incremental if isinstance(incremental, str) else (incremental or {}).get("field")
    lookback = incremental.get("lookback") if isinstance(incremental, dict) else None
    for attempt in (
        lambda: key_tuple(key),
        lambda: resolve_mode(write, key_tuple(key) if isinstance(key, str | list) else (), field, "x"),
        lambda: parse_checks(checks),
        lambda: parse_lookback(lookback),
    ):
        try:
            attempt()
        except CroftError as exc:
            codes.add(exc.code)
    return codes


@settings(max_examples=150, deadline=None)
@given(key=KEYS, write=WRITES, incremental=INCREMENTALS, checks=CHECKS)
def test_validate_reports_every_refusal_the_engine_would_make(key, write, incremental, checks):
    options = [
        f"{name}={value!r}"
        for name, value in (("key", key), ("write", write), ("incremental", incremental))
        if value is not None
    ]
    if checks:
        options.append(f"checks={checks!r}")
    text = f"from croft import ingest\n\n\n@ingest({', '.join(options)})\ndef rows(ctx):\n    yield {{}}\n"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.py"
        path.write_text(text)
        facts = read_python_facts(path, "x", "assets/x.py")
    reported = {p.code for p in (*facts.problems, *static_problems(facts)) if p.severity == "error"}
    refused = engine_refusals(key, write, incremental, checks)
    assert refused <= reported, (text, refused, reported)


# -- numbers in croft.json: each has a range in the one table (bounds.BOUNDS), checked by validate and run ----

OK_INGEST = """
from croft import ingest


@ingest(key="id")
def rows(ctx):
    yield {"id": 1}
"""


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"history": {"keepDays": 999999}}, "history.keepDays"),
        ({"history": {"keepDays": 1e30}}, "history.keepDays"),
        ({"history": {"keepDays": 0}}, "history.keepDays"),
        ({"maxRuntime": "9999 days"}, "maxRuntime"),
        ({"maxRuntime": 1e30}, "maxRuntime"),
    ],
)
def test_numbers_in_croft_json_outside_their_range_are_refused_by_validate_and_run(make_project, config, key):
    """keepDays 999999 once passed validate, then every run ended INTERNAL_ERROR (OverflowError in the
    prune); now validate and the run both refuse it as CONFIG_INVALID naming the key, and nothing runs."""
    root = make_project({"assets/orders.py": OK_INGEST}, **config)
    for command in ("validate", "run", "status"):
        code, envelope = croft(root, command)
        assert code == 2 and not envelope["ok"], (command, envelope)
        [bad] = [p for p in envelope["problems"] if p["code"] == "CONFIG_INVALID"]
        assert bad["details"]["key"] == key and "from" in bad["message"], bad
    assert not (root / "warehouse.sqlite").exists()


def test_the_largest_keep_days_still_runs_and_prunes(make_project):
    """The top of the range is usable: the run and its prune work with it (no overflow)."""
    from croft.project.bounds import BOUNDS

    top = int(BOUNDS["history.keepDays"].high)
    root = make_project({"assets/orders.py": OK_INGEST}, history={"keepDays": top})
    code, envelope = croft(root, "run")
    assert code == 0 and envelope["data"]["status"] == "succeeded", envelope
