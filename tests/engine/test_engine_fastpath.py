"""The stage's batch fast path stages exactly what its row-by-row loop stages, and an extraction pumps
its batches into the stage from the source's own thread.

Every case writes the same rows twice, into two warehouses: once as batches (which the fast path may
take) and once with the fast path turned off. The tables, their column types, the write counts, the
cursor and any error must be the same.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import croft.engine.staging as staging
from croft.core.problems import CroftError
from croft.engine.extract import Extraction
from croft.engine.warehouse import Warehouse

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BATCH = 40  # longer than the fast path's minimum, so most batches can take it


def instant(second: int) -> str:
    return datetime.fromtimestamp(1_767_225_600 + second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _batches(rows: list[Any], size: int = BATCH) -> list[list[Any]]:
    return [rows[at : at + size] for at in range(0, len(rows), size)]


def _outcome(path: Path, loads: list[list[Any]], options: dict[str, Any]) -> dict[str, Any]:
    """Every load written in turn; what a reader can see afterwards (or the error that stopped it)."""
    results: list[Any] = []
    with Warehouse(path) as wh:
        for load in loads:
            try:
                result = wh.write_ingest("t", _batches(load), now=NOW, **options)
            except CroftError as exc:
                results.append(("error", exc.code, exc.problem.message, exc.problem.details))
                continue
            results.append(
                (result.rows_in, result.added, result.updated, result.unchanged, result.deleted,
                 result.cursor_after, result.columns_added)
            )  # fmt: skip
    conn = sqlite3.connect(path)
    try:
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 't'").fetchone()
        rows = conn.execute('SELECT *, typeof("k") FROM "t" ORDER BY rowid').fetchall() if has else []
        types = conn.execute('PRAGMA table_info("t")').fetchall()
    finally:
        conn.close()
    return {"results": results, "rows": rows, "types": types}


def both_ways(tmp_path: Path, loads: list[list[Any]], monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    """The outcome with the fast path and without it; asserts they agree and that the fast path ran."""
    taken = []
    real = staging.Stage._add_fast

    def counted(self: staging.Stage, rows: list[Any]) -> bool:
        took = real(self, rows)
        taken.append(took)
        return took

    with monkeypatch.context() as patch:
        patch.setattr(staging.Stage, "_add_fast", counted)
        fast = _outcome(tmp_path / "fast.sqlite", loads, options)
    with monkeypatch.context() as patch:
        patch.setattr(staging, "_FAST_MIN", 10**9)
        slow = _outcome(tmp_path / "slow.sqlite", loads, options)
    assert fast == slow
    return fast, taken


def plain_rows(n: int, start: int = 0, *, shift: int = 0) -> list[dict[str, Any]]:
    return [
        {"k": i, "name": f"row {i}", "amount": i * 0.5, "ok": i % 2 == 0, "blob": b"\x00\x01",
         "at": instant(i + shift)}
        for i in range(start, start + n)
    ]  # fmt: skip


def test_plain_rows_take_the_fast_path_and_land_as_the_loop_lands_them(tmp_path, monkeypatch) -> None:
    first = plain_rows(200)
    again = plain_rows(200)
    changed = [dict(r, amount=r["amount"] + 1) if r["k"] % 7 == 0 else r for r in plain_rows(230)]
    outcome, taken = both_ways(tmp_path, [first, again, changed], monkeypatch, key="k", cursor_field="at")
    assert all(taken) and taken
    assert outcome["results"][1][3] == 200  # the re-run: every row unchanged
    assert outcome["results"][2][1:3] == (30, 29)  # 30 new rows, 29 changed ones
    types = {row[1]: row[2] for row in outcome["types"]}
    assert types["ok"] == "INTEGER" and types["blob"] == "BLOB" and types["at"] == "TEXT"


def test_repeated_keys_across_fast_and_slow_batches_keep_the_highest_cursor_then_the_last(
    tmp_path, monkeypatch
) -> None:
    rows = plain_rows(120)
    rows += [dict(r, name="later, same cursor") for r in plain_rows(40, 10)]  # ties: the later row wins
    rows += [dict(r, name="older", at=instant(-5)) for r in plain_rows(40, 60)]  # lower cursor: loses
    rows[130]["tags"] = ["x"]  # one row with a list: its batch goes through the loop
    outcome, taken = both_ways(tmp_path, [rows], monkeypatch, key="k", cursor_field="at")
    assert True in taken and False in taken
    names = {row[0]: row[1] for row in outcome["rows"]}
    assert names[15] == "later, same cursor" and names[65] == "row 65"


def test_rows_whose_keys_come_in_another_order_are_the_same_shape(tmp_path, monkeypatch) -> None:
    rows = [dict(reversed(list(r.items()))) if r["k"] % 3 else r for r in plain_rows(100)]
    outcome, taken = both_ways(tmp_path, [rows], monkeypatch, key="k", cursor_field="at")
    assert all(taken)
    assert [row[1] for row in outcome["rows"][:3]] == ["row 0", "row 1", "row 2"]


@pytest.mark.parametrize(
    "cursor",
    [
        lambda i: instant(i).replace("Z", "+00:00"),  # another timestamp form: the loop ranks it
        lambda i: "2026-02-30T00:00:00Z" if i == 50 else instant(i),  # the common form, not a real day
        lambda i: f"{i:020d}",  # twenty characters, but not a time
        lambda i: i,  # numbers
        lambda i: "２０２６-01-01T00:00:00Z" if i == 70 else instant(i),  # digits that are not ASCII
    ],
    ids=["offset", "no-such-day", "digits", "numbers", "wide-digits"],
)
def test_cursors_in_other_forms_are_settled_by_the_loop(tmp_path, monkeypatch, cursor) -> None:
    rows = [dict(r, at=cursor(r["k"])) for r in plain_rows(120)]
    rows += [dict(r, at=cursor(r["k"])) for r in plain_rows(20, 40)]
    outcome, _ = both_ways(tmp_path, [rows], monkeypatch, key="k", cursor_field="at")
    assert outcome["results"][0][0] == 140 or outcome["results"][0][0] == "error"


def test_a_column_that_starts_empty_takes_the_type_of_its_first_value(tmp_path, monkeypatch) -> None:
    rows = [dict(r, late=None if r["k"] < 90 else True) for r in plain_rows(200)]
    outcome, taken = both_ways(tmp_path, [rows], monkeypatch, key="k", cursor_field="at")
    assert all(taken)
    assert {row[1]: row[2] for row in outcome["types"]}["late"] == "INTEGER"


def test_text_keys_and_values_the_loop_converts(tmp_path, monkeypatch) -> None:
    rows = [
        {"k": f"key-{i % 90}", "when": datetime(2026, 1, 1, i % 24, tzinfo=UTC) if i == 33 else "x",
         "n": i}
        for i in range(160)
    ]  # fmt: skip
    outcome, taken = both_ways(tmp_path, [rows], monkeypatch, key="k", mode="merge")
    assert True in taken and False in taken
    assert len(outcome["rows"]) == 90


@pytest.mark.parametrize(
    "spoil",
    [
        lambda r: r.update(k=None),  # a missing key value
        lambda r: r.update(amount=2**70),  # an integer SQLite cannot hold
        lambda r: r.update(amount=object()),  # a value nothing can store
    ],
    ids=["null-key", "huge-int", "object"],
)
def test_a_bad_row_fails_the_same_way_naming_the_same_row(tmp_path, monkeypatch, spoil) -> None:
    rows = plain_rows(150)
    spoil(rows[97])
    outcome, _ = both_ways(tmp_path, [rows], monkeypatch, key="k", cursor_field="at")
    (error,) = outcome["results"]
    assert error[0] == "error" and error[1] == "ROW_INVALID" and "Row 97 " in error[2]
    assert outcome["rows"] == []


def test_a_replace_with_a_repeated_key_fails_either_way(tmp_path, monkeypatch) -> None:
    rows = plain_rows(100) + plain_rows(5, 20)
    outcome, _ = both_ways(tmp_path, [rows], monkeypatch, key="k", mode="replace")
    assert outcome["results"][0][:2] == ("error", "CHECK_FAILED")


VALUES = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.booleans(),
    st.binary(max_size=3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(
        st.tuples(st.integers(0, 60), VALUES, st.integers(0, 5), st.booleans()), min_size=0, max_size=200
    ),
    incremental=st.booleans(),
)
def test_any_rows_land_the_same_with_and_without_the_fast_path(
    tmp_path_factory, monkeypatch, data, incremental
) -> None:
    rows = []
    for key, value, second, flip in data:
        row = {"k": key, "v": value, "at": instant(second)}
        rows.append(dict(reversed(list(row.items()))) if flip else row)
    options: dict[str, Any] = (
        {"key": "k", "cursor_field": "at"} if incremental else {"key": "k", "mode": "merge"}
    )
    both_ways(tmp_path_factory.mktemp("rows"), [rows, rows[::-1]], monkeypatch, **options)


# ------------------------------------------------------------------------------------------ pumping


def test_an_extraction_stages_its_batches_from_the_source_thread(tmp_path) -> None:
    seen: set[str] = set()
    real = staging.Stage.add_many

    def add_many(self: staging.Stage, rows: Any) -> None:
        seen.add(threading.current_thread().name)
        real(self, rows)

    extraction = Extraction("t", 30)
    sample: list[Any] = []
    stream = extraction.stream(lambda: iter(plain_rows(5000)), lambda exc: exc, sample, 3)  # type: ignore[arg-type,return-value]
    with pytest.MonkeyPatch.context() as patch, Warehouse(tmp_path / "w.sqlite") as wh:
        patch.setattr(staging.Stage, "add_many", add_many)
        result = wh.write_ingest("t", stream, key="k", cursor_field="at", now=NOW)
    assert seen == {"croft-extract-t"}
    assert result.added == 5000 and extraction.rows_so_far == 5000
    assert [row["k"] for row in sample] == [0, 1, 2]


def test_a_row_error_inside_the_source_thread_reaches_the_caller_and_writes_nothing(tmp_path) -> None:
    rows = plain_rows(3000)
    rows[2500]["k"] = None
    stream = Extraction("t", 30).stream(lambda: iter(rows), lambda exc: exc)  # type: ignore[arg-type,return-value]
    with Warehouse(tmp_path / "w.sqlite") as wh:
        with pytest.raises(CroftError) as raised:
            wh.write_ingest("t", stream, key="k", cursor_field="at", now=NOW)
        assert raised.value.code == "ROW_INVALID" and "Row 2500 " in raised.value.problem.message
        assert not wh.has_table("t")


def test_staging_a_long_batch_is_progress_not_a_timeout(tmp_path) -> None:
    """The no-progress watchdog does not fire while the source thread is busy staging."""
    release = threading.Event()
    real = staging.Stage.add_many

    def slow_add_many(self: staging.Stage, rows: Any) -> None:
        release.wait(2.0)  # four timeouts long: only the staging flag keeps the step alive
        real(self, rows)

    stream = Extraction("t", 0.5).stream(lambda: iter([plain_rows(100)]), lambda exc: exc)  # type: ignore[arg-type,return-value]
    with pytest.MonkeyPatch.context() as patch, Warehouse(tmp_path / "w.sqlite") as wh:
        patch.setattr(staging.Stage, "add_many", slow_add_many)
        result = wh.write_ingest("t", stream, key="k", cursor_field="at", now=NOW)
    assert result.added == 100


def test_a_silent_source_still_times_out_while_pumping(tmp_path) -> None:
    stop = threading.Event()

    def stalls() -> Any:
        yield plain_rows(20)
        stop.wait(10)  # silent longer than the timeout
        yield plain_rows(20, 20)

    stream = Extraction("t", 1.0).stream(stalls, lambda exc: exc)  # type: ignore[arg-type,return-value]
    try:
        with Warehouse(tmp_path / "w.sqlite") as wh:
            with pytest.raises(CroftError) as raised:
                wh.write_ingest("t", stream, key="k", cursor_field="at", now=NOW)
            assert raised.value.code == "TIMEOUT" and (raised.value.problem.details or {})["rowsSoFar"] == 20
            assert not wh.has_table("t")
    finally:
        stop.set()


def test_a_stage_failure_in_the_source_thread_is_the_warehouses_not_the_assets(tmp_path) -> None:
    """A SQLite error while the worker stages is named as the warehouse's (DISK_FULL here), not turned
    into an error in the asset's code."""

    def full(self: staging.Stage, rows: Any) -> None:
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorcode = sqlite3.SQLITE_FULL  # what SQLite's own error carries
        raise error

    blamed: list[BaseException] = []

    def on_error(exc: BaseException) -> CroftError:
        blamed.append(exc)
        return CroftError("ASSET_CODE_ERROR", "the asset's code failed", "")

    stream = Extraction("t", 30).stream(lambda: iter(plain_rows(50)), on_error)
    with pytest.MonkeyPatch.context() as patch, Warehouse(tmp_path / "w.sqlite") as wh:
        patch.setattr(staging.Stage, "add_many", full)
        with pytest.raises(CroftError) as raised:
            wh.write_ingest("t", stream, key="k", cursor_field="at", now=NOW)
    assert raised.value.code == "DISK_FULL" and blamed == []
