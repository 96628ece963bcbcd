"""The warehouse: write modes as diffs, stamps that only move for changed rows, the cursor committed with
the rows, blocking checks, SQL/Python transforms, and all-or-nothing writes (even under SIGKILL)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from croft.core.problems import CODES, CroftError
from croft.engine import warehouse as warehouse_module
from croft.engine.sqlerrors import problem_for
from croft.engine.warehouse import Warehouse, next_stamp, row_hash

T0 = datetime(2026, 6, 24, 10, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    warehouse = Warehouse(tmp_path / "warehouse.sqlite")
    yield warehouse
    warehouse.close()


def stamps(wh: Warehouse, table: str, key: str = "id") -> dict[Any, str]:
    return dict(wh.conn.execute(f'SELECT "{key}", "_loaded_at" FROM "{table}"').fetchall())


def rows(wh: Warehouse, table: str) -> list[dict[str, Any]]:
    return list(wh.read_rows(table))


def snapshot(path: Path) -> dict[str, Any]:
    """Every table's schema and rows, read through a fresh connection (what another process would see)."""
    conn = sqlite3.connect(path)
    try:
        tables = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        indexes = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
        ).fetchall()
        data = {name: sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"'))) for name, _ in tables}
        return {"tables": tables, "indexes": indexes, "data": data}
    finally:
        conn.close()


def test_public_names_are_sorted_and_exist() -> None:
    assert warehouse_module.__all__ == sorted(warehouse_module.__all__)
    assert all(hasattr(warehouse_module, name) for name in warehouse_module.__all__)


# ------------------------------------------------------------------------------------ replace without a key


def test_replace_without_key_diffs_by_content_with_multiplicity(wh: Warehouse) -> None:
    first = wh.write_ingest("plain", [{"a": 1}, {"a": 1}, {"a": 2}], now=at(0))
    assert (first.mode, first.added, first.deleted) == ("replace", 3, 0)
    second = wh.write_ingest("plain", [{"a": 1}, {"a": 2}, {"a": 3}], now=at(1))
    assert (second.added, second.deleted, second.unchanged, second.updated) == (1, 1, 2, 0)
    found = wh.conn.execute('SELECT a, "_loaded_at" FROM plain ORDER BY a').fetchall()
    assert found == [(1, first.loaded_at), (2, first.loaded_at), (3, second.loaded_at)]


def test_replace_without_key_of_the_same_rows_changes_nothing(wh: Warehouse) -> None:
    batch = [{"a": 1, "b": "x"}, {"a": 1, "b": "x"}]
    first = wh.write_ingest("plain", batch, now=at(0))
    again = wh.write_ingest("plain", list(reversed(batch)), now=at(5))
    assert (again.added, again.deleted, again.unchanged, again.changed) == (0, 0, 2, False)
    assert wh.state("plain")["last_loaded_at"] == first.loaded_at  # type: ignore[index]
    assert wh.version("plain") == first.loaded_at


def test_replace_with_no_rows_empties_the_table(wh: Warehouse) -> None:
    wh.write_ingest("plain", [{"a": 1}], now=at(0))
    result = wh.write_ingest("plain", [], now=at(1))
    assert (result.deleted, result.row_count, result.changed) == (1, 0, True)


# ------------------------------------------------------------------------------------ replace with a key


def test_replace_with_key_updates_changed_deletes_missing_keeps_unchanged(wh: Warehouse) -> None:
    first = wh.write_ingest(
        "people", [{"id": 1, "n": "a"}, {"id": 2, "n": "b"}, {"id": 3, "n": "c"}], key="id", now=at(0)
    )
    second = wh.write_ingest(
        "people", [{"id": 1, "n": "a"}, {"id": 2, "n": "B"}, {"id": 4, "n": "d"}], key="id", now=at(1)
    )
    assert (second.added, second.updated, second.deleted, second.unchanged) == (1, 1, 1, 1)
    assert stamps(wh, "people") == {1: first.loaded_at, 2: second.loaded_at, 4: second.loaded_at}
    assert [r["n"] for r in rows(wh, "people")] == ["a", "B", "d"]


def test_replace_with_a_duplicated_key_fails_the_unique_check_and_writes_nothing(
    wh: Warehouse, tmp_path: Path
) -> None:
    wh.write_ingest("people", [{"id": 1, "n": "a"}], key="id", now=at(0))
    before = snapshot(tmp_path / "warehouse.sqlite")
    with pytest.raises(CroftError) as caught:
        wh.write_ingest("people", [{"id": 2, "n": "x"}, {"id": 2, "n": "y"}, {"id": 3}], key="id", now=at(1))
    assert caught.value.code == "CHECK_FAILED"
    assert caught.value.problem.details == {
        "check": "unique(id)",
        "failing": 2,
        "sample": [{"id": 2, "count": 2}],
    }
    assert snapshot(tmp_path / "warehouse.sqlite") == before


def test_a_unique_index_backs_the_key(wh: Warehouse) -> None:
    wh.write_ingest("people", [{"id": 1, "region": "eu"}], key=["id", "region"], now=at(0))
    indexes = wh.conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'people'")
    assert any("UNIQUE INDEX" in sql and '("id", "region")' in sql for (sql,) in indexes)


# ------------------------------------------------------------------------------------ merge


def test_merge_updates_only_changed_rows_and_keeps_absent_ones(wh: Warehouse) -> None:
    first = wh.write_ingest(
        "orders",
        [{"id": 1, "v": "a", "ts": 10}, {"id": 2, "v": "b", "ts": 11}, {"id": 3, "v": "c", "ts": 12}],
        key="id",
        cursor_field="ts",
        now=at(0),
    )
    second = wh.write_ingest(
        "orders",
        [{"id": 2, "v": "b", "ts": 11}, {"id": 3, "v": "C", "ts": 13}, {"id": 4, "v": "d", "ts": 14}],
        key="id",
        cursor_field="ts",
        now=at(1),
    )
    assert second.mode == "merge"
    assert (second.added, second.updated, second.unchanged, second.deleted) == (1, 1, 1, 0)
    assert stamps(wh, "orders") == {
        1: first.loaded_at,
        2: first.loaded_at,
        3: second.loaded_at,
        4: second.loaded_at,
    }


def test_merge_keeps_the_highest_cursor_then_the_last_yielded_per_key(wh: Warehouse) -> None:
    batch = [
        {"id": 1, "v": "newest", "ts": "2026-06-24T12:00:00+02:00"},
        {"id": 1, "v": "older", "ts": "2026-06-24T09:00:00Z"},
        {"id": 2, "v": "first", "ts": "2026-06-24T09:00:00Z"},
        {"id": 2, "v": "second", "ts": "2026-06-24T09:00:00Z"},
    ]
    result = wh.write_ingest("orders", batch, key="id", cursor_field="ts", now=at(0))
    assert (result.rows_in, result.added) == (4, 2)
    assert {r["id"]: r["v"] for r in rows(wh, "orders")} == {1: "newest", 2: "second"}


def test_a_rewritten_window_keeps_stamps_and_does_not_move_the_version(wh: Warehouse) -> None:
    window = [{"id": i, "updated_at": f"2026-06-2{i}T00:00:00Z"} for i in range(1, 4)]
    first = wh.write_ingest("events", window, key="id", cursor_field="updated_at", now=at(0))
    again = wh.write_ingest("events", window[1:], key="id", cursor_field="updated_at", now=at(60))
    assert (again.changed, again.unchanged, again.added, again.updated) == (False, 2, 0, 0)
    assert set(stamps(wh, "events").values()) == {first.loaded_at}
    assert wh.version("events") == first.loaded_at
    assert [w["loaded_at"] for w in wh.writes("events")] == [first.loaded_at, again.loaded_at]


# ------------------------------------------------------------------------------------ append


def test_append_inserts_every_row_every_time(wh: Warehouse) -> None:
    wh.write_ingest("log", [{"m": "x", "n": 1}], mode="append", cursor_field="n", now=at(0))
    result = wh.write_ingest(
        "log", [{"m": "x", "n": 1}, {"m": "y", "n": 2}], mode="append", cursor_field="n", now=at(1)
    )
    assert (result.mode, result.added, result.row_count, result.cursor_after) == ("append", 2, 3, 2)


def test_mode_inference_and_refusals(wh: Warehouse) -> None:
    with pytest.raises(CroftError) as caught:
        wh.write_ingest("x", [], cursor_field="ts", now=at(0))
    assert caught.value.code == "INCREMENTAL_WITHOUT_KEY"  # the same code croft validate gives
    with pytest.raises(CroftError):
        wh.write_ingest("x", [], mode="merge", now=at(0))
    with pytest.raises(CroftError):
        wh.write_ingest("x", [], mode="replace", key="id", cursor_field="ts", now=at(0))
    assert wh.state("x") is None


# ------------------------------------------------------------------------------------ cursor


def test_cursor_is_the_max_committed_with_rows_and_never_goes_back(wh: Warehouse) -> None:
    def load(batch: list[dict[str, Any]], minute: int) -> Any:
        return wh.write_ingest("orders", batch, key="id", cursor_field="ts", now=at(minute))

    first = load([{"id": 1, "ts": "2026-06-24T10:00:00Z"}, {"id": 2, "ts": "2026-06-24T11:00:00+02:00"}], 0)
    assert (first.cursor_before, first.cursor_after) == (None, "2026-06-24T10:00:00Z")
    older = load([{"id": 3, "ts": "2026-06-01T00:00:00Z"}], 1)
    assert older.cursor_after == "2026-06-24T10:00:00Z"
    empty = load([], 2)
    assert empty.cursor_after == "2026-06-24T10:00:00Z"
    later = load([{"id": 4, "ts": "2026-06-24T10:00:01Z"}], 3)
    assert later.cursor_after == "2026-06-24T10:00:01Z"
    state = wh.state("orders")
    assert state is not None
    assert (state["cursor_value"], state["cursor_type"], state["cursor_field"]) == (
        "2026-06-24T10:00:01Z",
        "timestamp",
        "ts",
    )


def test_a_cursor_of_another_type_is_refused_and_nothing_is_written(wh: Warehouse, tmp_path: Path) -> None:
    wh.write_ingest("orders", [{"id": 1, "ts": 100}], key="id", cursor_field="ts", now=at(0))
    before = snapshot(tmp_path / "warehouse.sqlite")
    with pytest.raises(CroftError) as caught:
        wh.write_ingest("orders", [{"id": 2, "ts": "2026-06-24"}], key="id", cursor_field="ts", now=at(1))
    assert caught.value.code == "CURSOR_INVALID"
    assert snapshot(tmp_path / "warehouse.sqlite") == before


def test_a_cursor_field_no_row_has_is_cursor_invalid(wh: Warehouse) -> None:
    with pytest.raises(CroftError) as caught:
        wh.write_ingest("orders", [{"id": 1, "updated": 3}], key="id", cursor_field="ts", now=at(0))
    assert caught.value.code == "CURSOR_INVALID"
    assert wh.state("orders") is None


def test_the_epoch_unit_is_kept_with_the_cursor(wh: Warehouse) -> None:
    wh.write_ingest(
        "o", [{"id": 1, "c": 1_700_000_000}], key="id", cursor_field="c", cursor_unit="s", now=at(0)
    )
    state = wh.state("o")
    assert state is not None and (state["cursor_type"], state["cursor_unit"]) == ("number", "s")


# ------------------------------------------------------------------------------------ checks


def test_a_failing_check_writes_nothing_and_moves_no_cursor(wh: Warehouse, tmp_path: Path) -> None:
    wh.write_ingest("orders", [{"id": 1, "amount": 5, "ts": 1}], key="id", cursor_field="ts", now=at(0))
    before = snapshot(tmp_path / "warehouse.sqlite")
    with pytest.raises(CroftError) as caught:
        wh.write_ingest(
            "orders",
            [{"id": 1, "amount": 6, "ts": 2}, {"id": 2, "amount": -1, "ts": 3, "note": "new column"}],
            key="id",
            cursor_field="ts",
            checks=["amount >= 0"],
            now=at(1),
        )
    assert caught.value.code == "CHECK_FAILED"
    assert caught.value.problem.details == {
        "check": "amount >= 0",
        "failing": 1,
        "sample": [{"id": 2, "amount": -1, "ts": 3, "note": "new column"}],
    }
    assert snapshot(tmp_path / "warehouse.sqlite") == before  # rows, the new column, cursor, bookkeeping
    assert wh.columns("orders") == ["id", "amount", "ts"]


def test_check_injection_is_refused_before_anything_runs(wh: Warehouse, tmp_path: Path) -> None:
    wh.write_ingest("orders", [{"id": 1}], key="id", now=at(0))
    before = snapshot(tmp_path / "warehouse.sqlite")
    for bad in ("1=1); DROP TABLE orders; --", "id > 0; DELETE FROM orders"):
        with pytest.raises(CroftError) as caught:
            wh.write_ingest("orders", [{"id": 2}], key="id", checks=[bad], now=at(1))
        assert caught.value.code == "ASSET_INVALID"
    assert snapshot(tmp_path / "warehouse.sqlite") == before


def test_checks_on_unchanged_rows_are_not_rerun_but_whole_table_checks_are(wh: Warehouse) -> None:
    wh.write_ingest("t", [{"id": 1, "v": -1}], key="id", now=at(0))
    wh.write_ingest(
        "t", [{"id": 1, "v": -1}], key="id", checks=["v >= 0"], now=at(1)
    )  # row unchanged: passes
    with pytest.raises(CroftError) as caught:
        wh.write_ingest("t", [{"id": 1, "v": -1}], key="id", checks=["min_rows(2)"], now=at(2))
    assert caught.value.problem.details["check"] == "min_rows(2)"


# ------------------------------------------------------------------------------------ columns and rows


def test_a_new_column_is_added_and_old_rows_keep_their_stamp(wh: Warehouse) -> None:
    first = wh.write_ingest("t", [{"id": 1, "a": 1}], key="id", cursor_field="a", now=at(0))
    second = wh.write_ingest(
        "t", [{"id": 1, "a": 1}, {"id": 2, "a": 2, "b": {"x": [1]}}], key="id", cursor_field="a", now=at(1)
    )
    assert second.columns_added == ("b",)
    assert wh.columns("t") == ["id", "a", "b"]
    assert stamps(wh, "t") == {1: first.loaded_at, 2: second.loaded_at}
    assert rows(wh, "t")[1] == {"id": 2, "a": 2, "b": '{"x":[1]}'}


def test_column_types_follow_the_python_values(wh: Warehouse) -> None:
    wh.write_ingest("t", [{"i": 1, "f": 1.5, "s": "x", "b": True, "j": [1], "n": None}], now=at(0))
    info = {row[1]: row[2] for row in wh.conn.execute('PRAGMA table_info("t")')}
    assert info == {"i": "INTEGER", "f": "REAL", "s": "TEXT", "b": "INTEGER", "j": "TEXT", "n": "",
                    "_loaded_at": "TEXT", "_row_hash": "TEXT"}  # fmt: skip


def test_a_null_in_a_new_column_does_not_change_the_row_hash() -> None:
    assert row_hash({"id": 1}) == row_hash({"id": 1, "later": None})
    assert row_hash({"id": 1}) != row_hash({"id": "1"})


@pytest.mark.parametrize(
    ("batch", "needle"),
    [
        pytest.param(["not a dict"], "Row 0", id="not-a-dict"),
        pytest.param(
            [{"id": 1}, {"name": "no id"}], "Row 1 of t has no value for key column 'id'", id="no-key"
        ),
        pytest.param([{"id": None}], "key column 'id'", id="null-key"),
        pytest.param([{"id": 1, "_loaded_at": "x"}], "_loaded_at", id="reserved"),
        pytest.param([{"id": 1, "rowid": 3}], "rowid", id="rowid"),
        pytest.param([{"id": 1, "bad name": 3}], "bad name", id="bad-name"),
        pytest.param([{"id": 1, "v": 2**70}], "64 bits", id="huge-int"),
        pytest.param([{"id": 1, "v": object()}], "object", id="odd-type"),
        pytest.param([{"id": 1, "ID": 1}], "twice", id="case-twins"),
    ],
)
def test_bad_rows_are_row_invalid_and_write_nothing(wh: Warehouse, batch: list[Any], needle: str) -> None:
    with pytest.raises(CroftError) as caught:
        wh.write_ingest("t", batch, key="id", now=at(0))
    assert caught.value.code == "ROW_INVALID"
    assert needle in caught.value.problem.message
    assert wh.state("t") is None and not wh.has_table("t")


def test_batches_are_lists_of_rows(wh: Warehouse) -> None:
    result = wh.write_ingest("t", [[{"id": 1}, {"id": 2}], {"id": 3}], key="id", now=at(0))
    assert result.rows_in == 3


def test_stamps_increase_strictly_even_when_the_clock_does_not() -> None:
    assert next_stamp(T0, [None]) == "2026-06-24T10:00:00.000000Z"
    assert next_stamp(T0, ["2026-06-24T10:00:00.000000Z"]) == "2026-06-24T10:00:00.000001Z"
    assert next_stamp(T0, ["2026-06-25T00:00:00.000000Z", None]) == "2026-06-25T00:00:00.000001Z"


def test_writes_at_the_same_instant_get_distinct_stamps(wh: Warehouse) -> None:
    first = wh.write_ingest("t", [{"id": 1}], key="id", now=at(0))
    second = wh.write_ingest("t", [{"id": 2}], key="id", now=at(0))
    assert second.loaded_at > first.loaded_at


def test_a_preview_does_the_write_then_rolls_back(wh: Warehouse, tmp_path: Path) -> None:
    before = snapshot(tmp_path / "warehouse.sqlite")
    result = wh.write_ingest("t", [{"id": 1}], key="id", now=at(0), commit=False)
    assert (result.added, result.committed) == (1, False)
    assert snapshot(tmp_path / "warehouse.sqlite") == before


def test_reading_a_table_never_built_is_input_not_built(wh: Warehouse) -> None:
    with pytest.raises(CroftError) as caught:
        rows(wh, "nothing")
    assert caught.value.code == "INPUT_NOT_BUILT"


# ------------------------------------------------------------------------------------ transforms


@pytest.fixture
def orders(wh: Warehouse) -> Warehouse:
    wh.write_ingest(
        "orders",
        [{"id": 1, "amount": 5, "status": "paid"}, {"id": 2, "amount": 7, "status": "open"}],
        key="id",
        now=at(0),
    )
    return wh


def test_sql_transform_is_written_as_a_diff_keeping_unchanged_stamps(orders: Warehouse) -> None:
    sql = "-- key: id\nSELECT id, amount * 2 AS doubled FROM orders WHERE status IN ('paid', 'open');"
    first = orders.write_transform_sql("doubled", sql, key="id", now=at(1))
    assert (first.added, first.changed) == (2, True)
    orders.write_ingest(
        "orders",
        [{"id": 1, "amount": 5, "status": "paid"}, {"id": 2, "amount": 8, "status": "open"}],
        key="id",
        now=at(2),
    )
    second = orders.write_transform_sql("doubled", sql, key="id", now=at(3))
    assert (second.updated, second.unchanged, second.added) == (1, 1, 0)
    assert stamps(orders, "doubled") == {1: first.loaded_at, 2: second.loaded_at}
    assert orders.inputs_seen("doubled") == {"orders": orders.version("orders")}


def test_sql_transform_without_key_diffs_by_content(orders: Warehouse) -> None:
    sql = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"
    first = orders.write_transform_sql("by_status", sql, inputs=["orders"], now=at(1))
    again = orders.write_transform_sql("by_status", sql, inputs=["orders"], now=at(2))
    assert (again.changed, again.unchanged) == (False, 2)
    assert set(stamps(orders, "by_status", key="status").values()) == {first.loaded_at}


def test_sql_transform_with_new_output_columns_is_recreated_and_restamped(orders: Warehouse) -> None:
    first = orders.write_transform_sql("t", "SELECT id FROM orders", key="id", now=at(1))
    second = orders.write_transform_sql("t", "SELECT id, status FROM orders", key="id", now=at(2))
    assert second.recreated and second.changed
    assert orders.columns("t") == ["id", "status"]
    assert set(stamps(orders, "t").values()) == {second.loaded_at} != {first.loaded_at}


def test_sql_transform_drops_reserved_columns_of_its_inputs(orders: Warehouse) -> None:
    orders.write_transform_sql("copy", "SELECT * FROM orders", key="id", now=at(1))
    assert orders.columns("copy") == ["id", "amount", "status"]


def test_sql_transform_with_no_rows_still_has_its_columns(orders: Warehouse) -> None:
    result = orders.write_transform_sql("none", "SELECT id, status FROM orders WHERE 0", now=at(1))
    assert (result.row_count, orders.columns("none")) == (0, ["id", "status"])


def test_sql_transform_records_the_tables_it_read_when_not_told(orders: Warehouse) -> None:
    orders.write_transform_sql("t", "WITH p AS (SELECT * FROM orders) SELECT id FROM p", now=at(1))
    assert orders.inputs_seen("t") == {"orders": orders.version("orders")}


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        pytest.param("DELETE FROM orders", "SQL_NOT_SELECT", id="delete"),
        pytest.param("WITH x AS (SELECT 1) DELETE FROM orders", "SQL_NOT_SELECT", id="cte-delete"),
        pytest.param("SELECT 1; DROP TABLE orders", "SQL_NOT_ONE_STATEMENT", id="two-statements"),
        pytest.param("ATTACH 'other.db' AS o", "SQL_NOT_SELECT", id="attach"),
        pytest.param("PRAGMA writable_schema = 1", "SQL_NOT_SELECT", id="pragma"),
        pytest.param("SELECT * FROM missing_table", "SQL_ERROR", id="unknown-table"),
        pytest.param("SELECT id, id FROM orders", "SQL_ERROR", id="duplicate-output"),
        pytest.param("SELECT COUNT(*) FROM orders", "SQL_ERROR", id="unnamed-output"),
    ],
)
def test_sql_transforms_may_only_read(orders: Warehouse, tmp_path: Path, sql: str, code: str) -> None:
    before = snapshot(tmp_path / "warehouse.sqlite")
    with pytest.raises(CroftError) as caught:
        orders.write_transform_sql("bad", sql, now=at(1))
    assert caught.value.code == code
    assert caught.value.problem.asset == "bad"
    assert snapshot(tmp_path / "warehouse.sqlite") == before


def test_python_transform_is_a_full_refresh_written_as_a_diff(orders: Warehouse) -> None:
    def build() -> list[dict[str, Any]]:
        return [{"id": r["id"], "big": r["amount"] > 6} for r in orders.read_rows("orders")]

    version = orders.version("orders")
    first = orders.write_transform_rows("big", build(), key="id", inputs={"orders": version}, now=at(1))
    again = orders.write_transform_rows("big", build(), key="id", inputs={"orders": version}, now=at(2))
    assert (first.added, again.changed) == (2, False)
    assert orders.inputs_seen("big") == {"orders": version}
    shrunk = orders.write_transform_rows("big", build()[:1], key="id", inputs=["orders"], now=at(3))
    assert (shrunk.deleted, shrunk.row_count) == (1, 1)
    assert orders.state("big")["kind"] == "python"  # type: ignore[index]


# ------------------------------------------------------------------------------------ the sqlite3 boundary


def test_a_locked_warehouse_is_db_busy_and_retryable(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.sqlite"
    Warehouse(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with Warehouse(path, busy_timeout_ms=0) as wh, pytest.raises(CroftError) as caught:
            wh.write_ingest("t", [{"id": 1}], key="id", now=at(0))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert caught.value.code == "DB_BUSY" and caught.value.retryable


@pytest.mark.parametrize(
    "cls",
    [
        sqlite3.Error,
        sqlite3.DatabaseError,
        sqlite3.OperationalError,
        sqlite3.IntegrityError,
        sqlite3.ProgrammingError,
        sqlite3.InterfaceError,
        sqlite3.DataError,
        sqlite3.InternalError,
        sqlite3.NotSupportedError,
    ],
)
def test_every_sqlite3_error_class_maps_to_a_registered_code(cls: type[sqlite3.Error]) -> None:
    for user_sql in (False, True):
        error = problem_for(cls("boom"), "t", "writing t", Path("w.sqlite"), user_sql=user_sql)
        assert error.code in CODES


# ------------------------------------------------------------------------------------ crashes

CRASHING_WRITE = textwrap.dedent(
    """
    import sys
    from datetime import datetime, UTC
    from croft.engine.warehouse import Warehouse

    wh = Warehouse(sys.argv[1])
    wh.write_ingest(
        "orders",
        [{"id": 1, "v": "changed", "ts": 50}, {"id": 9, "v": "new", "ts": 99, "extra": 1}],
        key="id", cursor_field="ts", checks=["v IS NOT NULL"], run_id="r2", attempt=1,
        now=datetime(2026, 6, 25, tzinfo=UTC),
    )
    print("committed")
    """
)


@pytest.mark.processes
@pytest.mark.parametrize("point", ["after_stage", "before_commit"])
def test_sigkill_in_the_middle_of_a_write_leaves_everything_as_before(tmp_path: Path, point: str) -> None:
    path = tmp_path / "warehouse.sqlite"
    with Warehouse(path) as wh:
        wh.write_ingest(
            "orders",
            [{"id": 1, "v": "a", "ts": 10}, {"id": 2, "v": "b", "ts": 20}],
            key="id",
            cursor_field="ts",
            run_id="r1",
            attempt=1,
            now=at(0),
        )
    before = snapshot(path)
    env = {**os.environ, "CROFT_FAULT": point}
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITE, str(path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "committed" not in done.stdout
    assert snapshot(path) == before
    with Warehouse(path) as wh:
        state = wh.state("orders")
        assert state is not None and state["cursor_value"] == 20
        assert wh.columns("orders") == ["id", "v", "ts"]
        assert [w["run_id"] for w in wh.writes("orders")] == ["r1"]


@pytest.mark.processes
def test_without_the_fault_knob_the_same_write_commits(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.sqlite"
    Warehouse(path).close()
    env = {k: v for k, v in os.environ.items() if k != "CROFT_FAULT"}
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITE, str(path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    with Warehouse(path) as wh:
        assert wh.state("orders")["cursor_value"] == 99  # type: ignore[index]


@pytest.mark.parametrize("name", ["s", "old", "new", "kept", "t"])
def test_table_and_column_names_never_clash_with_croft_aliases(orders: Warehouse, name: str) -> None:
    sql = "SELECT id, amount AS c, status AS h, id AS n, id AS rid FROM orders"
    orders.write_transform_sql(name, sql, key="id", now=at(1))
    again = orders.write_transform_sql(name, sql, key="id", now=at(2))
    plain = orders.write_transform_sql(name + "_plain", sql, now=at(3))
    plain_again = orders.write_transform_sql(name + "_plain", sql, now=at(4))
    assert (again.unchanged, plain.added, plain_again.unchanged) == (2, 2, 2)


def test_append_with_a_key_fails_the_unique_check_when_a_key_returns(wh: Warehouse) -> None:
    wh.write_ingest("log", [{"id": 1}], mode="append", key="id", now=at(0))
    with pytest.raises(CroftError) as caught:
        wh.write_ingest("log", [{"id": 1}], mode="append", key="id", now=at(1))
    assert caught.value.problem.details["check"] == "unique(id)"
    assert wh.state("log")["row_count"] == 1  # type: ignore[index]
