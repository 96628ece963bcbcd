"""Check parsing, evaluation and the read-only sandbox for user SQL (no warehouse: a bare table)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from croft.core.problems import CroftError
from croft.engine import checks as checks_module
from croft.engine.checks import (
    Expression,
    MinRows,
    NotNull,
    Unique,
    implied_checks,
    parse_check,
    parse_checks,
    read_only,
    run_checks,
)

NEW = "2026-06-24T10:00:00.000001Z"
OLD = "2026-06-23T10:00:00.000000Z"


@pytest.fixture
def orders_db() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute(
        'CREATE TABLE orders (id INTEGER, amount REAL, status TEXT, "_loaded_at" TEXT, "_row_hash" TEXT)'
    )
    db.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?, 'h')",
        [(1, 10.0, "paid", OLD), (2, -5.0, "paid", OLD), (3, 7.0, None, NEW), (4, None, "open", NEW)],
    )
    db.execute("CREATE TABLE customers (id INTEGER)")
    yield db
    db.close()


COLUMNS = ["id", "amount", "status"]


def check(orders_db: sqlite3.Connection, *texts: str) -> None:
    run_checks(orders_db, "orders", parse_checks(texts), stamp=NEW, columns=COLUMNS, asset="orders")


def test_public_names_are_sorted_and_exist() -> None:
    assert checks_module.__all__ == sorted(checks_module.__all__)
    assert all(hasattr(checks_module, name) for name in checks_module.__all__)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("unique(id)", Unique(text="unique(id)", columns=("id",))),
        (" UNIQUE ( a , b ) ", Unique(text="UNIQUE ( a , b )", columns=("a", "b"))),
        ("not_null(a, b)", NotNull(text="not_null(a, b)", columns=("a", "b"))),
        ("min_rows(10)", MinRows(text="min_rows(10)", count=10)),
        ("amount >= 0", Expression(text="amount >= 0", sql="amount >= 0")),
        ("status IN ('a;b', 'c')", Expression(text="status IN ('a;b', 'c')", sql="status IN ('a;b', 'c')")),
        (
            "note != 'it''s -- fine'",
            Expression(text="note != 'it''s -- fine'", sql="note != 'it''s -- fine'"),
        ),
    ],
)
def test_checks_parse_into_their_kind(text: str, parsed: object) -> None:
    assert parse_check(text) == parsed


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1=1); DROP TABLE orders; --", id="statement-injection"),
        pytest.param("amount > 0; DELETE FROM orders", id="second-statement"),
        pytest.param("amount > 0 -- and more", id="comment"),
        pytest.param("amount > 0 /* hidden */", id="block-comment"),
        pytest.param("amount > 0) OR (1", id="closes-the-wrapper"),
        pytest.param("(amount > 0", id="unbalanced"),
        pytest.param("status = 'open", id="unclosed-quote"),
        pytest.param("unique(id, 2x)", id="bad-column-name"),
        pytest.param("   ", id="empty"),
    ],
)
def test_check_text_that_is_not_one_expression_is_refused(text: str) -> None:
    with pytest.raises(CroftError) as caught:
        parse_check(text)
    assert caught.value.code == "ASSET_INVALID"
    assert caught.value.problem.details == {"check": text.strip() or text}


def test_a_key_implies_unique_and_not_null() -> None:
    assert [c.text for c in implied_checks(("a", "b"))] == ["unique(a, b)", "not_null(a, b)"]
    assert implied_checks(()) == []


PASSING = ("unique(id)", "not_null(id)", "min_rows(4)", "id > 0", "amount >= 0")
# For each passing check, a change to the table that breaks it and no other check.
BREAKERS = {
    "unique(id)": "INSERT INTO orders VALUES (3, 1.0, 'x', '" + NEW + "', 'h')",
    "not_null(id)": "INSERT INTO orders VALUES (NULL, 1.0, 'x', '" + NEW + "', 'h')",
    "min_rows(4)": "DELETE FROM orders WHERE id = 1",
    "id > 0": "INSERT INTO orders VALUES (-1, 1.0, 'x', '" + NEW + "', 'h')",
    "amount >= 0": "INSERT INTO orders VALUES (9, -1.0, 'x', '" + NEW + "', 'h')",
}


def test_passing_checks_raise_nothing(orders_db: sqlite3.Connection) -> None:
    statements: list[str] = []
    orders_db.set_trace_callback(statements.append)
    check(orders_db, *PASSING)  # -5 is an old row
    orders_db.set_trace_callback(None)
    # Each check really ran a query over the table...
    assert len([s for s in statements if "orders" in s]) >= len(PASSING)
    assert any("id > 0" in s for s in statements) and any("amount >= 0" in s for s in statements)
    # ...and would have failed, alone, on a table that breaks it: the pass above was a real evaluation.
    assert set(BREAKERS) == set(PASSING)
    for text, change in BREAKERS.items():
        orders_db.execute("SAVEPOINT probe")
        orders_db.execute(change)
        with pytest.raises(CroftError) as caught:
            check(orders_db, *PASSING)
        failed = {p.details["check"] for p in [caught.value.problem, *caught.value.extra] if p.details}
        assert failed == {text}
        orders_db.execute("ROLLBACK TO probe")
        orders_db.execute("RELEASE probe")


def test_expression_checks_only_see_rows_of_this_write_and_null_passes(orders_db: sqlite3.Connection) -> None:
    check(orders_db, "amount >= 0")  # row 2 (-5) is old; row 4 (NULL) passes
    # The same check over the older write's rows meets row 2 and fails: the pass looked at rows 3 and 4 only.
    with pytest.raises(CroftError) as caught:
        run_checks(
            orders_db, "orders", parse_checks(["amount >= 0"]), stamp=OLD, columns=COLUMNS, asset="orders"
        )
    assert caught.value.problem.details["sample"] == [{"id": 2, "amount": -5.0, "status": "paid"}]
    # NULL passes by the rule, not by accident: an expression that is false for row 4's NULL fails on it.
    with pytest.raises(CroftError) as caught:
        check(orders_db, "coalesce(amount, -1) >= 0")
    assert caught.value.problem.details["sample"] == [{"id": 4, "amount": None, "status": "open"}]


def test_a_failing_expression_reports_count_and_sample(orders_db: sqlite3.Connection) -> None:
    with pytest.raises(CroftError) as caught:
        check(orders_db, "amount > 8")
    assert caught.value.code == "CHECK_FAILED"
    assert caught.value.problem.details == {
        "check": "amount > 8",
        "failing": 1,
        "sample": [{"id": 3, "amount": 7.0, "status": None}],
    }


def test_not_null_looks_at_new_rows(orders_db: sqlite3.Connection) -> None:
    with pytest.raises(CroftError) as caught:
        check(orders_db, "not_null(status)")
    assert caught.value.problem.details["failing"] == 1
    assert caught.value.problem.details["sample"] == [{"id": 3, "amount": 7.0, "status": None}]


def test_unique_looks_at_the_whole_table(orders_db: sqlite3.Connection) -> None:
    orders_db.execute("INSERT INTO orders VALUES (1, 1.0, 'x', ?, 'h')", (NEW,))
    with pytest.raises(CroftError) as caught:
        check(orders_db, "unique(id)")
    details = caught.value.problem.details
    assert details == {"check": "unique(id)", "failing": 2, "sample": [{"id": 1, "count": 2}]}


def test_min_rows_counts_the_whole_table(orders_db: sqlite3.Connection) -> None:
    with pytest.raises(CroftError) as caught:
        check(orders_db, "min_rows(6)")
    assert caught.value.problem.details["failing"] == 2


def test_every_failure_is_reported_first_one_as_the_problem(orders_db: sqlite3.Connection) -> None:
    with pytest.raises(CroftError) as caught:
        check(orders_db, "min_rows(100)", "amount > 100")
    assert caught.value.problem.details["check"] == "min_rows(100)"
    assert [p.details["check"] for p in caught.value.extra] == ["amount > 100"]


def test_a_check_naming_a_missing_column_fails_instead_of_passing(orders_db: sqlite3.Connection) -> None:
    with pytest.raises(CroftError) as caught:
        check(orders_db, "not_null(customer_id)")
    assert caught.value.code == "CHECK_FAILED"
    assert "customer_id" in caught.value.problem.message


def test_checks_may_look_up_other_tables(orders_db: sqlite3.Connection) -> None:
    orders_db.execute("INSERT INTO customers VALUES (3)")
    with pytest.raises(CroftError) as caught:
        check(orders_db, "id IN (SELECT id FROM customers)")
    assert caught.value.problem.details["sample"] == [{"id": 4, "amount": None, "status": "open"}]


def test_an_expression_sqlite_rejects_is_sql_error(orders_db: sqlite3.Connection) -> None:
    with pytest.raises(CroftError) as caught:
        check(orders_db, "no_such_function(id)")
    assert caught.value.code == "SQL_ERROR"
    assert caught.value.problem.details["check"] == "no_such_function(id)"


def test_read_only_refuses_writes_ddl_attach_and_pragma(orders_db: sqlite3.Connection) -> None:
    for statement in (
        "DELETE FROM orders",
        "UPDATE orders SET amount = 0",
        "INSERT INTO customers VALUES (9)",
        "DROP TABLE customers",
        "CREATE TABLE x (a)",
        "ATTACH ':memory:' AS other",
        "PRAGMA user_version = 7",
        "SELECT load_extension('x')",
    ):
        with read_only(orders_db), pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            orders_db.execute(statement)
    assert orders_db.execute("SELECT COUNT(*) FROM orders").fetchone() == (4,)
    assert orders_db.execute("PRAGMA user_version").fetchone() == (0,)  # the guard is gone after the block


def test_read_only_reports_the_tables_a_select_reads_but_not_ctes(orders_db: sqlite3.Connection) -> None:
    reads: set[str] = set()
    with read_only(orders_db, reads):
        orders_db.execute(
            "WITH paid AS (SELECT * FROM orders WHERE status = 'paid') "
            "SELECT paid.* FROM paid JOIN customers ON customers.id = paid.id"
        ).fetchall()
    assert reads == {"orders", "customers"}
