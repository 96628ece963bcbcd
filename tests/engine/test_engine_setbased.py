"""A SQL transform is staged and diffed inside SQLite; its counts must be the Python path's on the same rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import croft.engine.staging as staging
from croft.core.problems import CroftError
from croft.engine.staging import statement_body
from croft.engine.warehouse import Warehouse

T0 = datetime(2026, 6, 24, 10, 0, tzinfo=UTC)

# Each state of the input, in order: changes, deletions, NULLs appearing and going, repeated contents.
STATES: list[list[dict[str, Any]]] = [
    [{"id": 1, "g": "a", "v": 1}, {"id": 2, "g": "a", "v": 2}, {"id": 3, "g": "b", "v": None}],
    [{"id": 1, "g": "a", "v": 1}, {"id": 2, "g": "a", "v": 5}, {"id": 3, "g": "b", "v": None}],
    [{"id": 1, "g": "a", "v": 1}, {"id": 3, "g": "b", "v": 7}, {"id": 4, "g": "c", "v": 1}],
    [{"id": 1, "g": "a", "v": 1}, {"id": 3, "g": "b", "v": 7}, {"id": 4, "g": "c", "v": 1}],
    [{"id": 1, "g": "a", "v": None}, {"id": 4, "g": "a", "v": 1}, {"id": 5, "g": "a", "v": 1}],
    [],
    [{"id": 9, "g": "z", "v": 2.5}, {"id": 8, "g": "z", "v": 2.5}],
]

CASES = [
    pytest.param("SELECT id, g, v * 2 AS w FROM src", ("id",), id="keyed-projection"),
    pytest.param("SELECT g, v FROM src", (), id="keyless-with-repeated-rows"),
    pytest.param("SELECT g, COUNT(*) AS n, SUM(v) AS total FROM src GROUP BY g", ("g",), id="keyed-group-by"),
    pytest.param("SELECT g, MAX(v) AS top FROM src GROUP BY g;  -- trailing", (), id="keyless-group-by"),
]


def counts(result: Any) -> tuple[int, int, int, int, bool]:
    return result.added, result.updated, result.unchanged, result.deleted, result.changed


@pytest.mark.parametrize(("sql", "key"), CASES)
def test_set_based_counts_equal_the_python_paths(tmp_path: Path, sql: str, key: tuple[str, ...]) -> None:
    with Warehouse(tmp_path / "warehouse.sqlite") as wh:
        for step, state in enumerate(STATES):
            moment = T0 + timedelta(minutes=step)
            wh.write_ingest("src", state, mode="replace", key="id", now=moment)
            cursor = wh.conn.execute(statement_body(sql))
            names = [d[0] for d in cursor.description]
            selected = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            in_sql = wh.write_transform_sql("by_sql", sql, key=key, inputs=["src"], now=moment)
            in_python = wh.write_transform_rows("by_python", selected, key=key, inputs=["src"], now=moment)
            assert counts(in_sql) == counts(in_python), (step, state)
            assert in_sql.row_count == in_python.row_count == len(selected)
            order = ", ".join(names)
            stamped = f"SELECT {order}, _loaded_at FROM {{}} ORDER BY {order}, _loaded_at"
            assert (
                wh.conn.execute(stamped.format("by_sql")).fetchall()
                == wh.conn.execute(stamped.format("by_python")).fetchall()
            )


def test_unchanged_rows_keep_their_stamp_and_nothing_is_written(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "warehouse.sqlite") as wh:
        wh.write_ingest("src", STATES[0], key="id", now=T0)
        first = wh.write_transform_sql("t", "SELECT id, v FROM src", key="id", now=T0)
        wh.conn.execute("CREATE TEMP TABLE hits (what TEXT)")
        for event in ("INSERT", "UPDATE", "DELETE"):
            wh.conn.execute(
                f"CREATE TEMP TRIGGER hit_{event} AFTER {event} ON main.t "
                f"BEGIN INSERT INTO hits VALUES ('{event}'); END"
            )
        again = wh.write_transform_sql("t", "SELECT id, v FROM src", key="id", now=T0 + timedelta(1))
        assert counts(again) == (0, 0, 3, 0, False)
        stamps = {row[0] for row in wh.conn.execute("SELECT _loaded_at FROM t")}
        assert stamps == {first.loaded_at}
        assert wh.conn.execute("SELECT COUNT(*) FROM hits").fetchone() == (0,)  # no data row touched


def test_statement_body_cuts_only_a_top_level_semicolon() -> None:
    assert statement_body("SELECT 1;") == "SELECT 1"
    assert statement_body("SELECT ';' AS a -- x;\n; -- done") == "SELECT ';' AS a -- x;\n"
    assert statement_body('SELECT 1 AS "a;b" /* ; */') == 'SELECT 1 AS "a;b" /* ; */'
    assert statement_body("SELECT 'it''s;' AS a;") == "SELECT 'it''s;' AS a"


def test_a_merge_settles_keys_repeated_across_batches_and_row_shapes(tmp_path: Path) -> None:
    """Repeats far apart (across stage flushes), in rows of different shapes: per key the highest cursor
    wins, then the later row; a lower cursor that comes later loses."""
    rows: list[dict[str, Any]] = []
    for i in range(6000):
        row: dict[str, Any] = {"id": i % 1000, "n": i // 1000, "v": f"v{i}"}
        if i % 7 == 0:
            row["extra"] = i
        rows.append(row)
    rows.append({"id": 5, "n": 0, "v": "too old"})  # last yielded, but a lower cursor
    rows.append({"n": 5, "id": 6, "v": "tie, later"})  # same cursor as id 6's best: the later row wins
    with Warehouse(tmp_path / "warehouse.sqlite") as wh:
        result = wh.write_ingest("t", [rows[:3000], rows[3000:]], key="id", cursor_field="n", now=T0)
        got = {r[0]: r[1:] for r in wh.conn.execute("SELECT id, n, v, extra FROM t")}
    assert (result.rows_in, result.added, result.row_count) == (6002, 1000, 1000)
    assert got[5] == (5, "v5005", 5005)  # 5005 % 7 == 0: the winner carries the extra column
    assert got[6] == (5, "tie, later", None)  # and a later winner without it leaves it NULL
    assert got[7] == (5, "v5007", None) and got[0] == (5, "v5000", None)
    assert wh_cursor(tmp_path) == 5


def test_a_repeated_key_ranks_utc_instants_by_time_beside_other_timestamp_forms(tmp_path: Path) -> None:
    """The common form (…Z, ranked as text while staging) and offset forms compare as times when a key
    repeats: the later instant wins whatever its spelling; the same instant goes to the later row."""
    rows = [
        {"id": 1, "at": "2026-01-01T10:00:00+02:00", "v": "08:00 UTC"},
        {"id": 1, "at": "2026-01-01T07:00:00Z", "v": "07:00 UTC, later row"},
        {"id": 2, "at": "2026-01-01T09:00:00Z", "v": "09:00 UTC"},
        {"id": 2, "at": "2026-01-01T10:00:00+01:00", "v": "09:00 UTC, later row"},
        {"id": 3, "at": "2026-01-01T12:00:00Z", "v": "12:00 UTC"},
        {"id": 3, "at": "2026-01-01T12:30:00+01:00", "v": "11:30 UTC, later row"},
    ]
    with Warehouse(tmp_path / "warehouse.sqlite") as wh:
        wh.write_ingest("t", rows, key="id", cursor_field="at", now=T0)
        got = dict(wh.conn.execute("SELECT id, v FROM t").fetchall())
    assert got == {1: "08:00 UTC", 2: "09:00 UTC, later row", 3: "12:00 UTC"}


def wh_cursor(tmp_path: Path) -> Any:
    with Warehouse(tmp_path / "warehouse.sqlite") as wh:
        return wh.state("t")["cursor_value"]  # type: ignore[index]


REPEATS = [
    pytest.param([{"id": 1, "g": "a"}, {"id": 2, "g": "b"}, {"id": 1, "g": "c"}], ("id",), id="a-key-twice"),
    pytest.param(
        [{"id": None, "g": "a"}, {"id": 2, "g": "b"}, {"id": None, "g": "c"}], ("id",), id="null-twice"
    ),
    pytest.param([{"id": None, "g": "a"}, {"id": 2, "g": "b"}], ("id",), id="null-once"),
    pytest.param(
        [{"id": 1, "g": None}, {"id": 1, "g": None}, {"id": 1, "g": "x"}],
        ("id", "g"),
        id="composite-null-part",
    ),
    pytest.param([{"id": 1, "g": "a"}, {"id": 1, "g": "b"}], ("id", "g"), id="composite-distinct"),
]


@pytest.mark.parametrize(("rows", "key"), REPEATS)
def test_a_select_that_repeats_a_key_fails_as_the_sort_and_the_python_path_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: list[dict[str, Any]], key: tuple[str, ...]
) -> None:
    """On a table that exists, the SELECT's rows are staged under a unique index on the key, which finds
    a repeat as the rows go in. What it reports is what sorting the staged keys reports, NULL keys
    included (a unique index lets them repeat, the sort groups them), and what the Python path reports
    where it takes the rows at all (it refuses a NULL key outright); nothing is written."""

    def outcome(folder: str, sorted_keys: bool, python: bool) -> Any:
        with monkeypatch.context() as patch, Warehouse(tmp_path / folder / "warehouse.sqlite") as wh:
            if sorted_keys:
                patch.setattr(staging, "_INDEX_STAGE_KEYS", False)
            sql = "SELECT id, g FROM src"
            wh.write_ingest("src", [{"id": 7, "g": "seed"}], mode="append", now=T0)
            if python:
                write = partial(wh.write_transform_rows, "t", key=key, inputs=["src"])
                write([{"id": 7, "g": "seed"}], now=T0)
            else:
                write = partial(wh.write_transform_sql, "t", sql, key=key, inputs=["src"])
                write(now=T0)
            wh.conn.execute("DELETE FROM src")
            wh.write_ingest("src", rows, mode="append", now=T0 + timedelta(minutes=1))
            later = T0 + timedelta(minutes=2)
            try:
                done = counts(write(rows, now=later) if python else write(now=later))
            except CroftError as exc:
                done = ("CroftError", exc.code, str(exc), exc.problem.details)
                assert wh.conn.execute("SELECT id, g FROM t").fetchall() == [(7, "seed")]
            return done

    indexed = outcome("indexed", sorted_keys=False, python=False)
    assert indexed == outcome("sorted", sorted_keys=True, python=False)
    if all(row[k] is not None for row in rows for k in key):
        assert indexed == outcome("python", sorted_keys=False, python=True)
