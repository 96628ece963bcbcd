"""Discovery: which files are assets, what they are called, and which names croft refuses."""

from __future__ import annotations

import pytest

from croft.project.config import load_project
from croft.project.discovery import all_problems, discover, suggest_name

INGEST = """
from croft import ingest

@ingest(schedule="every hour")
def rows(ctx):
    yield {"id": 1}
"""
SQL = "SELECT 1 AS one\n"


def found(make_project, files):
    return discover(load_project(make_project(files)))


def test_assets_are_found_in_subfolders_and_sorted_by_name(make_project):
    assets, problems = found(
        make_project,
        {"assets/zeta.py": INGEST, "assets/shop/alpha.sql": SQL, "assets/shop/deep/mid.sql": SQL},
    )
    assert problems == []
    assert list(assets) == ["alpha", "mid", "zeta"]
    assert assets["alpha"].rel == "assets/shop/alpha.sql"
    assert assets["alpha"].kind == "sql" and assets["zeta"].kind == "ingest"
    assert assets["mid"].path.is_absolute()


def test_other_files_caches_and_package_markers_are_not_assets(make_project):
    assets, problems = found(
        make_project,
        {
            "assets/orders.py": INGEST,
            "assets/__init__.py": "",
            "assets/__pycache__/orders.cpython-311.py": INGEST,
            "assets/.hidden/secret.sql": SQL,
            "assets/notes.md": "# notes",
            "lib/helpers.py": "X = 1\n",
        },
    )
    assert list(assets) == ["orders"] and problems == []


def test_a_project_without_assets_folder_has_no_assets(make_project):
    root = make_project()
    (root / "assets").rmdir()
    assert discover(load_project(root)) == ({}, [])


def test_two_files_with_one_name_conflict_and_neither_is_an_asset(make_project):
    assets, problems = found(
        make_project, {"assets/orders.py": INGEST, "assets/shop/orders.sql": SQL, "assets/ok.sql": SQL}
    )
    assert list(assets) == ["ok"]
    (conflict,) = problems
    assert conflict.code == "NAME_CONFLICT"
    assert "assets/orders.py" in conflict.message and "assets/shop/orders.sql" in conflict.message
    assert conflict.details == {"files": ["assets/orders.py", "assets/shop/orders.sql"]}


@pytest.mark.parametrize(
    ("filename", "suggestion"),
    [
        pytest.param("order.sql", "orders", id="sql-keyword-gets-plural"),
        pytest.param("select.py", "selects", id="another-keyword"),
        pytest.param("MyTable.sql", "my_table", id="camel-case"),
        pytest.param("daily-sales.sql", "daily_sales", id="dash"),
        pytest.param("_private.py", "private", id="leading-underscore"),
        pytest.param("croft_runs.sql", "runs", id="croft-prefix"),
        pytest.param("croft.sql", "data", id="croft-itself"),
        pytest.param("2024_sales.sql", "t_2024_sales", id="leading-digit"),
    ],
)
def test_invalid_names_are_refused_with_a_suggestion(make_project, filename, suggestion):
    text = INGEST if filename.endswith(".py") else SQL
    assets, problems = found(make_project, {f"assets/{filename}": text})
    assert assets == {}
    (bad,) = problems
    assert bad.code == "NAME_INVALID"
    assert bad.suggestion == suggestion
    assert bad.file == f"assets/{filename}"
    assert suggestion in bad.hint


@pytest.mark.parametrize("name", ["orders", "a", "daily_sales_2024", "x1", "events_v2"])
def test_plain_names_are_accepted(make_project, name):
    assets, problems = found(make_project, {f"assets/{name}.sql": SQL})
    assert list(assets) == [name] and problems == []


def test_suggestions_are_themselves_valid_or_absent():
    for name in ["TABLE", "Group", "__", "---", "croft"]:
        suggestion = suggest_name(name)
        assert suggestion is None or (suggestion.isidentifier() and suggestion.islower())


def test_an_asset_with_problems_still_appears_and_all_problems_lists_it(make_project):
    assets, problems = found(
        make_project, {"assets/broken.py": "def rows(ctx):\n    pass\n", "assets/Bad.sql": SQL}
    )
    assert list(assets) == ["broken"]
    assert not assets["broken"].ok
    codes = [p.code for p in all_problems(assets, problems)]
    assert codes == ["NAME_INVALID", "ASSET_INVALID"]


def test_known_columns_reach_sql_input_detection(make_project):
    files = {"assets/report.sql": "SELECT id FROM a JOIN b ON a.k = b.k\n"}
    root = make_project(files)
    assets, _ = discover(load_project(root), known_columns={"a": ["id", "k"], "b": ["k"]})
    assert assets["report"].inputs == ("a", "b")
    assert assets["report"].ok
