"""Static facts: what croft reads from an asset's text, what it refuses, and proof it never runs the code."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from croft.project.asset import AssetFacts
from croft.project.config import load_project
from croft.project.discovery import discover
from croft.project.facts import parse_duration, read_python_facts
from croft.project.fingerprint import code_hash, file_key
from croft.project.sqlfacts import read_sql_facts, sql_inputs


def py_facts(tmp_path: Path, text: str, name: str = "asset") -> AssetFacts:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return read_python_facts(path, name, f"assets/{name}.py")


def sql_facts(tmp_path: Path, text: str, name: str = "report") -> AssetFacts:
    path = tmp_path / f"{name}.sql"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return read_sql_facts(path, name, f"assets/{name}.sql")


def codes(facts: AssetFacts) -> list[str]:
    return [p.code for p in facts.problems]


# --- Python assets ----------------------------------------------------------------------------------------


def test_an_ingest_is_read_from_its_decorator(tmp_path):
    facts = py_facts(
        tmp_path,
        """
        from croft import ingest

        @ingest(
            schedule="every hour",
            key=["id", "region"],
            incremental={"field": "created", "unit": "s", "lookback": "30 days"},
            secrets=["API_KEY"],
            checks=["amount >= 0"],
            write="merge",
            description="Charges",
            retries=5,
            timeout="90s",
        )
        def rows(ctx):
            yield {"id": 1}
        """,
    )
    assert facts.problems == ()
    assert facts.kind == "ingest"
    assert (facts.schedule, facts.schedule_line) == ("every hour", 4)
    assert facts.key == ("id", "region")
    assert facts.incremental == {"field": "created", "unit": "s", "lookback": "30 days"}
    assert facts.secrets == ("API_KEY",) and facts.checks == ("amount >= 0",)
    assert (facts.write, facts.description, facts.retries, facts.timeout_s) == ("merge", "Charges", 5, 90.0)
    assert facts.inputs == () and facts.sql is None


def test_defaults_and_a_bare_incremental_field(tmp_path):
    facts = py_facts(
        tmp_path,
        """
        import croft

        @croft.ingest(key="id", incremental="updated_at")
        def rows(ctx):
            yield {}
        """,
    )
    assert facts.problems == ()
    assert facts.kind == "ingest" and facts.schedule is None
    assert facts.key == ("id",)
    assert facts.incremental == {"field": "updated_at", "unit": None, "lookback": None}
    assert (facts.retries, facts.timeout_s, facts.write) == (2, 600.0, None)


def test_a_python_transform_has_inputs_and_no_schedule(tmp_path):
    facts = py_facts(
        tmp_path,
        """
        from croft import transform as tf

        @tf(inputs=["orders", "customers"], key="id")
        def build(ctx):
            yield from ctx.rows("orders")
        """,
    )
    assert facts.problems == ()
    assert (facts.kind, facts.inputs, facts.key, facts.schedule) == (
        "python",
        ("orders", "customers"),
        ("id",),
        None,
    )


def test_a_non_literal_option_is_asset_invalid_with_its_line(tmp_path):
    facts = py_facts(
        tmp_path,
        """
        from croft import ingest
        EVERY = "every hour"

        @ingest(key="id",
                schedule=EVERY)
        def rows(ctx):
            yield {}
        """,
    )
    (problem,) = facts.problems
    assert problem.code == "ASSET_INVALID"
    assert problem.line == 5
    assert "schedule=" in problem.message and "line 5" in problem.message
    assert problem.asset == "asset" and problem.file == "assets/asset.py"
    assert facts.schedule is None and facts.key == ("id",)


def test_a_file_without_a_croft_decorator_shows_the_form(tmp_path):
    facts = py_facts(tmp_path, "def rows(ctx):\n    yield {}\n")
    (problem,) = facts.problems
    assert problem.code == "ASSET_INVALID"
    assert "defines no @ingest or @transform" in problem.message
    assert "@ingest(" in problem.hint and "def rows(ctx)" in problem.hint


def test_a_syntax_error_is_asset_invalid_with_its_line(tmp_path):
    facts = py_facts(tmp_path, 'from croft import ingest\n\n@ingest(schedule="daily"\ndef rows(ctx):\n')
    assert codes(facts) == ["ASSET_INVALID"]
    assert facts.problems[0].line is not None
    assert facts.kind == "ingest"


def test_an_unknown_option_gets_did_you_mean(tmp_path):
    facts = py_facts(
        tmp_path, "from croft import ingest\n@ingest(shedule='every hour')\ndef rows(ctx): ...\n"
    )
    (problem,) = facts.problems
    assert problem.code == "ASSET_INVALID" and problem.suggestion == "schedule"
    assert "did you mean schedule=" in problem.hint


def test_a_transform_with_a_schedule_is_told_transforms_follow_inputs(tmp_path):
    facts = py_facts(
        tmp_path,
        "from croft import transform\n@transform(inputs=['a'], schedule='daily')\ndef rows(ctx): ...\n",
    )
    (problem,) = facts.problems
    assert "follow their inputs" in problem.message


def test_a_transform_without_inputs_is_invalid(tmp_path):
    facts = py_facts(tmp_path, "from croft import transform\n@transform(key='id')\ndef rows(ctx): ...\n")
    assert codes(facts) == ["ASSET_INVALID"]
    assert "inputs=" in facts.problems[0].message


@pytest.mark.parametrize(
    "options",
    [
        pytest.param('schedule=""', id="empty-schedule"),
        pytest.param("schedule=5", id="schedule-not-text"),
        pytest.param("key=5", id="key-not-text"),
        pytest.param('secrets="API_KEY"', id="secrets-not-a-list"),
        pytest.param('secrets=["has space"]', id="secret-name-not-env-name"),
        pytest.param('checks="amount > 0"', id="checks-not-a-list"),
        pytest.param('write="upsert"', id="unknown-write-mode"),
        pytest.param("retries=-1", id="negative-retries"),
        pytest.param("retries=True", id="bool-retries"),
        pytest.param('timeout="soon"', id="timeout-not-a-duration"),
        pytest.param('key="id", incremental={"field": "t", "unit": "us"}', id="bad-unit"),
        pytest.param('key="id", incremental={"feld": "t"}', id="unknown-incremental-key"),
        pytest.param('key="id", incremental=5', id="incremental-not-field"),
        pytest.param('description=["x"]', id="description-not-text"),
        pytest.param("positional", id="positional-argument"),
        pytest.param("**{'key': 'id'}", id="splatted-options"),
    ],
)
def test_wrongly_typed_options_are_asset_invalid(tmp_path, options):
    facts = py_facts(tmp_path, f"from croft import ingest\n@ingest({options})\ndef rows(ctx): ...\n")
    assert codes(facts) == ["ASSET_INVALID"]
    assert facts.problems[0].line == 2


def test_bare_decorator_without_parentheses_is_invalid(tmp_path):
    facts = py_facts(tmp_path, "from croft import ingest\n@ingest\ndef rows(ctx): ...\n")
    assert codes(facts) == ["ASSET_INVALID"] and "parentheses" in facts.problems[0].message


def test_two_decorated_functions_in_one_file_are_invalid(tmp_path):
    text = "from croft import ingest\n@ingest()\ndef a(ctx): ...\n@ingest()\ndef b(ctx): ...\n"
    assert codes(py_facts(tmp_path, text)) == ["ASSET_INVALID"]


@pytest.mark.parametrize(
    ("options", "code"),
    [
        pytest.param('write="merge"', "ASSET_INVALID", id="merge-needs-key"),
        pytest.param('incremental="updated_at"', "INCREMENTAL_WITHOUT_KEY", id="incremental-needs-key"),
        pytest.param(
            'key="id", incremental="t", write="replace"', "ASSET_INVALID", id="replace-cannot-be-incremental"
        ),
    ],
)
def test_write_rules_between_key_and_incremental(tmp_path, options, code):
    facts = py_facts(tmp_path, f"from croft import ingest\n@ingest({options})\ndef rows(ctx): ...\n")
    assert codes(facts) == [code]


def test_incremental_without_key_is_fine_when_appending(tmp_path):
    facts = py_facts(
        tmp_path, 'from croft import ingest\n@ingest(incremental="t", write="append")\ndef rows(c): ...\n'
    )
    assert facts.problems == ()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("10m", 600.0),
        ("90s", 90.0),
        ("1.5 hours", 5400.0),
        ("500ms", 0.5),
        ("45", 45.0),
        (30, 30.0),
        (2.5, 2.5),
    ],
)
def test_timeouts_accept_units_and_numbers(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "soon", "10 fortnights", 0, -5, True, None, "-1m"])
def test_timeouts_refuse_what_is_not_a_duration(value):
    assert parse_duration(value) is None


def test_facts_survive_a_json_round_trip(tmp_path):
    facts = py_facts(
        tmp_path, "from croft import ingest\n@ingest(schedule=5, key='id')\ndef rows(ctx): ...\n"
    )
    assert AssetFacts.from_dict(facts.to_dict()) == facts


# --- Reading never runs the code --------------------------------------------------------------------------


def test_reading_facts_never_imports_or_executes_the_asset(make_project, tmp_path):
    marker = tmp_path / "executed.txt"
    module_name = "boobytrapped_helper"
    root = make_project(
        {
            "assets/trap.py": f"""
                from pathlib import Path
                import lib.{module_name}
                Path({str(marker)!r}).write_text("the asset ran")
                raise SystemExit("importing this asset must never happen")

                from croft import ingest

                @ingest(schedule="every hour", key="id")
                def rows(ctx):
                    Path({str(marker)!r}).write_text("rows ran")
                    yield {{"id": 1}}
                """,
            f"lib/{module_name}.py": f"""
                from pathlib import Path
                Path({str(marker)!r}).write_text("the lib ran")
                raise RuntimeError("boom")
                """,
        }
    )
    before = set(sys.modules)
    project = load_project(root)
    assets, problems = discover(project)
    code_hash(project, assets["trap"])
    file_key(project, assets["trap"])
    assert problems == [] and assets["trap"].problems == ()
    assert assets["trap"].schedule == "every hour"
    assert not marker.exists()
    assert not any("trap" in name or module_name in name for name in set(sys.modules) - before)


# --- SQL assets ---------------------------------------------------------------------------------------------


def test_a_sql_asset_header_and_inputs(tmp_path):
    facts = sql_facts(
        tmp_path,
        """
        -- description: orders per customer and day
        -- key: customer_id, day
        -- check: n >= 0
        -- a plain comment in the header
        -- check: not_null(day)
        WITH recent AS (
            SELECT * FROM orders WHERE day >= '2026-01-01'  -- recent only
        )
        SELECT c.id AS customer_id, r.day, count(*) AS n
        FROM recent AS r
        JOIN customers c ON c.id = r.customer_id
        WHERE r.status NOT IN (SELECT status FROM cancelled_statuses)
        GROUP BY 1, 2;
        -- trailing comment
        """,
    )
    assert facts.problems == ()
    assert facts.kind == "sql"
    assert facts.description == "orders per customer and day"
    assert facts.key == ("customer_id", "day")
    assert facts.checks == ("n >= 0", "not_null(day)")
    assert facts.inputs == ("cancelled_statuses", "customers", "orders")
    assert facts.sql.startswith("WITH recent AS") and facts.sql.endswith("GROUP BY 1, 2")


RECURSIVE = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT i FROM n"


@pytest.mark.parametrize(
    ("sql", "inputs"),
    [
        pytest.param(
            "SELECT order_id, name FROM orders JOIN customers USING (customer_id)",
            ("customers", "orders"),
            id="join-using",
        ),
        pytest.param("SELECT x FROM (SELECT z FROM b) JOIN a ON a.k = z", ("a", "b"), id="subquery-in-from"),
        pytest.param("SELECT Amount FROM Main.Orders", ("orders",), id="case-and-main-schema"),
        pytest.param('SELECT "weird col" FROM "Order Lines"', ("order lines",), id="quoted-names"),
        pytest.param("SELECT local_date(ts) AS day FROM events", ("events",), id="engine-udf"),
        pytest.param(RECURSIVE, (), id="recursive-cte-is-not-an-input"),
        pytest.param(
            "SELECT a.id FROM a, b WHERE a.id = b.id AND (SELECT max(v) FROM c) > 0",
            ("a", "b", "c"),
            id="comma-join-and-scalar-subquery",
        ),
        pytest.param("SELECT id, total FROM a JOIN b ON a.k = b.k", ("a", "b"), id="unqualified-across-join"),
        pytest.param(
            "SELECT x FROM a WHERE y IN (SELECT z FROM b WHERE b.w = a.x)",
            ("a", "b"),
            id="correlated-subquery",
        ),
    ],
)
def test_sql_inputs_come_from_sqlite_itself(sql, inputs):
    found, error = sql_inputs(sql)
    assert error is None
    assert found == inputs


def test_known_columns_seed_the_stub_tables():
    found, error = sql_inputs("SELECT id FROM a JOIN b USING (k)", {"a": ["id", "k"], "b": ["k", "v"]})
    assert (found, error) == (("a", "b"), None)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        pytest.param("INSERT INTO t VALUES (1)", "SQL_NOT_SELECT", id="insert"),
        pytest.param("DELETE FROM orders", "SQL_NOT_SELECT", id="delete"),
        pytest.param("WITH x AS (SELECT 1) DELETE FROM orders", "SQL_NOT_SELECT", id="delete-behind-with"),
        pytest.param("ATTACH 'other.db' AS other", "SQL_NOT_SELECT", id="attach"),
        pytest.param("PRAGMA table_info(orders)", "SQL_NOT_SELECT", id="pragma"),
        pytest.param("SELECT load_extension('evil')", "SQL_NOT_SELECT", id="load-extension"),
        pytest.param("SELEC id FROM orders", "SQL_NOT_SELECT", id="typo-first-word"),
        pytest.param("SELECT id FROM orders WHERE", "SQL_ERROR", id="syntax-error"),
        pytest.param("SELECT 'unterminated FROM orders", "SQL_ERROR", id="unterminated-string"),
        pytest.param("SELECT * FROM elsewhere.orders", "SQL_ERROR", id="other-database"),
        pytest.param("SELECT nosuchfunc(1, 2) OVER () FROM t", "SQL_ERROR", id="not-a-window-function"),
    ],
)
def test_sql_that_is_not_one_select_is_refused(tmp_path, body, code):
    facts = sql_facts(tmp_path, f"-- key: id\n{body}\n")
    assert codes(facts) == [code]
    assert facts.problems[0].line == 2
    assert facts.problems[0].asset == "report"


def test_a_second_statement_is_refused_at_its_line(tmp_path):
    facts = sql_facts(tmp_path, "-- key: id\nSELECT 1 AS id;\n\n  SELECT 2 AS id;\n")
    assert codes(facts) == ["SQL_NOT_ONE_STATEMENT"]
    assert facts.problems[0].line == 4


def test_a_header_without_sql_is_not_a_select(tmp_path):
    facts = sql_facts(tmp_path, "-- key: id\n-- check: id > 0\n")
    assert codes(facts) == ["SQL_NOT_SELECT"]
    assert "no SELECT" in facts.problems[0].message


def test_a_sql_error_carries_sqlites_message(tmp_path):
    facts = sql_facts(tmp_path, "SELECT id FROM orders WHERE AND x\n")
    assert 'near "AND": syntax error' in facts.problems[0].message


def test_an_unknown_header_line_gets_did_you_mean(tmp_path):
    facts = sql_facts(tmp_path, "-- checks: n > 0\nSELECT 1 AS n\n")
    (problem,) = facts.problems
    assert problem.code == "HEADER_UNKNOWN_KEY"
    assert problem.line == 1
    assert problem.suggestion == "-- check: n > 0"
    assert facts.checks == ()


def test_a_repeated_single_header_is_invalid(tmp_path):
    facts = sql_facts(tmp_path, "-- key: a\n-- key: b\nSELECT 1 AS a\n")
    assert codes(facts) == ["ASSET_INVALID"] and facts.key == ("a",)


def test_header_like_comments_after_the_sql_starts_are_just_comments(tmp_path):
    facts = sql_facts(tmp_path, "SELECT 1 AS a\n-- key: a\n")
    assert facts.problems == () and facts.key == ()
