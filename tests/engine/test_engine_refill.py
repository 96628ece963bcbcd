"""Full refresh and backfill, in process: the flags' one reader, the chunks, who may have them, the table
look every view shares, a full refresh's write (all or nothing), the scheduler's hold of a lost table, and
the progress line."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from enginekit import croft, cursor, table

from croft.cli.refill import ChunkProgress, confirm_full_refresh
from croft.core.problems import CroftError
from croft.engine.backfill import resumed
from croft.engine.tablehealth import Seen, lost_rows, observe, table_problem
from croft.engine.warehouse import Warehouse
from croft.engine.window import Refill, Window, chunks, parse_refill, refill_refusal, since_at
from croft.scheduler.due import AssetInfo, DueInput, due_work
from croft.scheduler.setting import Scheduling
from croft.scheduler.tick.tableholds import live

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- the flags ------------------------------------------------------------------------------------------


def test_a_to_date_includes_that_day_and_no_to_means_now() -> None:
    refill = parse_refill(False, "2026-11-01", "2026-11-08", "1d", NOW)
    assert refill is not None and refill.window is not None
    assert refill.window.to_dict() == {"start": "2026-11-01T00:00:00Z", "end": "2026-11-09T00:00:00Z"}
    assert refill.chunk_s == 86400 and refill.to_given
    open_ended = parse_refill(False, "2026-11-30T12:00:00", None, None, NOW)
    assert open_ended is not None and open_ended.window is not None
    assert open_ended.window.to_dict() == {"start": "2026-11-30T12:00:00Z", "end": "2026-12-01T09:30:00Z"}
    assert not open_ended.to_given and open_ended.chunk_s is None
    assert parse_refill(True, None, None, None, NOW) == Refill(full_refresh=True)
    assert parse_refill(False, None, None, None, NOW) is None


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ((True, "2026-11-01", None, None), "does not go with --from"),
        ((False, None, "2026-11-08", None), "--to and --chunk go with --from"),
        ((False, "Nov 1", None, None), "--from 'Nov 1' is not a date or time"),
        ((False, "2026-11-08", "2026-11-01", None), "is empty"),
        ((False, "2026-11-01", None, "10s"), "a minute or more"),
        ((False, "2026-11-01", None, "soon"), "a minute or more"),
        ((False, "2000-01-01", None, "1 min"), "more than 10000"),
    ],
)
def test_flags_that_do_not_go_together_are_a_usage_error(flags: tuple[Any, ...], says: str) -> None:
    with pytest.raises(CroftError) as caught:
        parse_refill(*flags, NOW)
    assert caught.value.code == "USAGE" and says in caught.value.problem.message


def test_thirty_days_in_daily_chunks_are_thirty_chunks_the_last_one_shorter_when_the_window_is() -> None:
    month = Window(_at("2026-11-01T00:00:00Z"), _at("2026-12-01T00:00:00Z"))
    days = chunks(month, 86400)
    assert len(days) == 30 and days[0].end == days[1].start and days[-1].end == month.end
    odd = Window(_at("2026-11-01T00:00:00Z"), _at("2026-11-02T06:00:00Z"))
    assert [str(c) for c in chunks(odd, 86400)] == [
        "2026-11-01T00:00:00Z..2026-11-02T00:00:00Z",
        "2026-11-02T00:00:00Z..2026-11-02T06:00:00Z",
    ]
    assert chunks(odd, None) == [odd]


def test_since_is_the_window_start_in_the_saved_cursors_form() -> None:
    start = _at("2026-11-01T00:00:00Z")
    assert since_at(start, "timestamp", None) == "2026-11-01T00:00:00Z"
    assert since_at(start, None, None) == "2026-11-01T00:00:00Z"
    assert since_at(start, "number", "s") == 1793491200
    assert since_at(start, "number", "ms") == 1793491200000


def test_only_a_keyed_incremental_merge_may_be_backfilled_and_any_ingest_fully_refreshed() -> None:
    window = Refill(window=Window(_at("2026-11-01T00:00:00Z"), _at("2026-11-02T00:00:00Z")))
    full = Refill(full_refresh=True)
    assert refill_refusal("a", "ingest", ("id",), "updated_at", "merge", window) is None
    assert refill_refusal("a", "ingest", (), None, "replace", full) is None
    no_key = refill_refusal("a", "ingest", (), "updated_at", "append", window)
    assert no_key is not None and "no key=" in no_key.problem.message
    no_cursor = refill_refusal("a", "ingest", ("id",), None, "replace", window)
    assert no_cursor is not None and "no incremental= field" in no_cursor.problem.message
    assert "--full-refresh" in no_cursor.problem.hint
    appended = refill_refusal("a", "ingest", ("id",), "updated_at", "append", window)
    assert appended is not None and 'write="append"' in appended.problem.message
    ids = refill_refusal("a", "ingest", ("id",), "seq", "merge", window, ("number", None))
    assert ids is not None and "is a number without a unit, not a time" in ids.problem.message
    versions = refill_refusal("a", "ingest", ("id",), "v", "merge", window, ("string", None))
    assert versions is not None and "is text, not a time" in versions.problem.message
    assert refill_refusal("a", "ingest", ("id",), "at", "merge", window, ("number", "ms")) is None
    assert refill_refusal("a", "ingest", ("id",), "at", "merge", window, ("timestamp", None)) is None
    transform = refill_refusal("t", "sql", ("id",), None, "replace", full)
    assert transform is not None and "is a transform" in transform.problem.message


def test_a_backfill_resumes_only_for_the_same_start_and_chunk_and_end_or_none_given() -> None:
    record = {
        "start": "2026-11-01T00:00:00Z",
        "end": "2026-12-01T00:00:00Z",
        "chunkSeconds": 86400.0,
        "done": [0],
    }
    same = parse_refill(False, "2026-11-01", "2026-11-30", "1d", NOW)
    no_end = parse_refill(False, "2026-11-01", None, "1d", NOW)
    other_end = parse_refill(False, "2026-11-01", "2026-11-20", "1d", NOW)
    other_chunk = parse_refill(False, "2026-11-01", "2026-11-30", "6h", NOW)
    assert same is not None and resumed(record, same) == record
    assert no_end is not None and resumed(record, no_end) == record
    assert other_end is not None and resumed(record, other_end) is None
    assert other_chunk is not None and resumed(record, other_chunk) is None
    assert resumed(None, same) is None


# -- the table look -------------------------------------------------------------------------------------

ENTRY = {"rows": 40, "cursor": {"value": "2026-11-30T12:00:00Z"}, "columns": ["id", "name"]}


def test_a_dropped_table_is_missing_and_its_fix_is_the_full_refresh_for_an_incremental_ingest() -> None:
    found = table_problem("widgets", "ingest", True, ENTRY, Seen(False))
    assert found is not None and found.code == "TABLE_MISSING" and lost_rows(found)
    assert found.fix == {
        "kind": "command",
        "command": "croft run widgets --full-refresh",
        "description": "load the table again",
    }
    assert "40 rows" in found.message and "2026-11-30T12:00:00Z" in found.message
    plain = table_problem("names", "sql", False, ENTRY, Seen(False))
    assert plain is not None and plain.fix is not None and plain.fix["command"] == "croft run names"


def test_an_emptied_table_loses_its_rows_and_changed_columns_only_warn() -> None:
    emptied = table_problem("widgets", "ingest", True, ENTRY, Seen(True, ("id", "name"), False))
    assert emptied is not None and emptied.code == "TABLE_CHANGED" and lost_rows(emptied)
    assert emptied.details is not None and emptied.details["cause"] == "emptied"
    altered = table_problem("widgets", "ingest", True, ENTRY, Seen(True, ("id", "colour"), True))
    assert altered is not None and altered.code == "TABLE_CHANGED" and not lost_rows(altered)
    assert altered.severity == "warning"
    assert altered.details == {"cause": "columns", "missingColumns": ["name"], "extraColumns": ["colour"]}
    assert table_problem("widgets", "ingest", True, ENTRY, Seen(True, ("ID", "Name"), True)) is None
    assert table_problem("widgets", "ingest", True, None, Seen(False)) is None  # never built
    assert table_problem("widgets", "ingest", True, {**ENTRY, "rows": 0}, Seen(True, ("id", "name"))) is None


def test_the_look_reads_the_warehouse_as_it_is(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.sqlite") as wh:
        wh.write_ingest("a", [{"id": 1, "name": "x"}], key="id")
        wh.write_ingest("b", [{"id": 1}], key="id")
        wh.conn.execute('DELETE FROM "b"')
    seen = observe(tmp_path / "w.sqlite", ["a", "b", "c"])
    assert seen == {"a": Seen(True, ("id", "name"), True), "b": Seen(True, ("id",), False), "c": Seen(False)}
    assert observe(tmp_path / "nothing.sqlite", ["a"]) == {"a": Seen(False, warehouse=False)}
    (tmp_path / "folder.sqlite").mkdir()
    assert observe(tmp_path / "folder.sqlite", ["a"]) == {}  # cannot be read: nothing said


def test_a_deleted_warehouse_is_every_table_missing_and_a_plain_run_is_its_fix() -> None:
    found = table_problem("widgets", "ingest", True, ENTRY, Seen(False, warehouse=False))
    assert found is not None and found.code == "TABLE_MISSING" and not lost_rows(found)
    assert found.fix is not None and found.fix["command"] == "croft run widgets"
    assert "whole warehouse file" in found.message


# -- a full refresh's write -----------------------------------------------------------------------------


def test_a_full_refresh_replaces_rows_and_cursor_whole(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.sqlite") as wh:
        old = [{"id": i, "updated_at": f"2026-11-0{i}T00:00:00Z"} for i in range(1, 6)]
        wh.write_ingest("a", old, key="id", cursor_field="updated_at")
        new = [
            {"id": 1, "updated_at": "2026-11-01T00:00:00Z"},
            {"id": 9, "updated_at": "2026-11-02T00:00:00Z"},
        ]
        done = wh.write_ingest("a", new, key="id", cursor_field="updated_at", full_refresh=True)
        assert (done.added, done.deleted, done.recreated, done.changed) == (2, 5, True, True)
        assert [r["id"] for r in wh.read_rows("a")] == [1, 9]
        assert done.cursor_before == "2026-11-05T00:00:00Z" and done.cursor_after == "2026-11-02T00:00:00Z"
        state = wh.state("a")
        assert (
            state is not None and state["cursor_value"] == "2026-11-02T00:00:00Z" and state["row_count"] == 2
        )


def test_a_full_refresh_that_fails_its_checks_leaves_the_table_and_cursor_as_they_were(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.sqlite"
    with Warehouse(path) as wh:
        wh.write_ingest(
            "a",
            [{"id": 1, "n": 1, "updated_at": "2026-11-05T00:00:00Z"}],
            key="id",
            cursor_field="updated_at",
        )
        before = (list(wh.conn.execute('SELECT * FROM "a"')), wh.state("a"))
        with pytest.raises(CroftError) as caught:
            wh.write_ingest(
                "a",
                [{"id": 2, "n": -1, "updated_at": "2026-11-01T00:00:00Z"}],
                key="id",
                cursor_field="updated_at",
                checks=["n >= 0"],
                full_refresh=True,
            )
        assert caught.value.code == "CHECK_FAILED"
        assert (list(wh.conn.execute('SELECT * FROM "a"')), wh.state("a")) == before


def test_a_full_refresh_may_change_the_key_a_plain_write_refuses(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.sqlite") as wh:
        wh.write_ingest("a", [{"id": 1, "code": "x"}], key="id")
        with pytest.raises(CroftError) as caught:
            wh.write_ingest("a", [{"id": 1, "code": "x"}], key="code")
        assert "--full-refresh" in caught.value.problem.hint
        done = wh.write_ingest("a", [{"id": 1, "code": "x"}], key="code", full_refresh=True)
        assert done.committed and wh.state("a")["key_columns"] == ["code"]  # type: ignore[index]


# -- the commands' refusals -----------------------------------------------------------------------------

ROWS = """
from croft import ingest


@ingest({options})
def rows(ctx):
    yield [{{"id": 1, "updated_at": "2026-11-02T00:00:00Z", "since": str(ctx.since),
             "window": str(ctx.window)}}]
"""


def test_a_backfill_of_an_ingest_without_key_or_cursor_is_refused_with_the_reason(make_project: Any) -> None:
    root = make_project({"assets/plain.py": ROWS.format(options="")}, timezone="UTC")
    code, out = croft(root, "run", "plain", "--from", "2026-11-01")
    assert code == 2 and out["problems"][0]["code"] == "USAGE"
    assert "plain cannot be backfilled: no key=" in out["problems"][0]["message"]
    assert not (root / ".croft" / "runs.sqlite").exists() or "runId" not in out["data"]


def test_refills_take_one_ingest_and_never_a_scheduled_run(make_project: Any) -> None:
    options = 'key="id", incremental="updated_at"'
    root = make_project(
        {"assets/rows.py": ROWS.format(options=options), "assets/more.py": ROWS.format(options=options)},
        timezone="UTC",
    )
    code, out = croft(root, "run", "rows", "more", "--full-refresh", "--yes")
    assert code == 2 and "exactly one asset" in out["problems"][0]["message"]
    code, out = croft(root, "run", "--due", "rows", "--full-refresh")
    assert code == 2 and "refused from a scheduled run" in out["problems"][0]["message"]


def test_an_in_process_backfill_hands_the_window_to_the_asset(make_project: Any) -> None:
    root = make_project(
        {"assets/rows.py": ROWS.format(options='key="id", incremental="updated_at"')}, timezone="UTC"
    )
    code, out = croft(root, "run", "rows", "--from", "2026-11-01", "--to", "2026-11-02", "--chunk", "1d")
    assert code == 0, out
    assert out["data"]["steps"][0]["backfill"]["total"] == 2
    (row,) = table(root, "rows")
    assert row["since"] == "2026-11-02T00:00:00Z"  # the last chunk's start, merged over the first's row
    assert row["window"] == "2026-11-02T00:00:00Z..2026-11-03T00:00:00Z"
    assert cursor(root, "rows") == "2026-11-02T00:00:00Z"


# -- the scheduler's hold -------------------------------------------------------------------------------


def test_a_noted_lost_table_holds_the_ingest_until_a_successful_step_after_the_note() -> None:
    notes = {"widgets": {"since": "2026-12-01T01:00:30.000Z", "code": "TABLE_MISSING", "message": "gone"}}
    assert live(notes, {}) == notes
    assert live(notes, {"widgets": "2026-12-01T00:00:00.000Z"}) == notes
    assert live(notes, {"widgets": "2026-12-01T02:05:00.000Z"}) == {}
    widgets = AssetInfo(name="widgets", kind="ingest", schedule="every hour", cron="0 * * * *", code_hash="h")
    due = due_work(
        DueInput(
            assets={"widgets": widgets},
            now=_at("2026-12-01T02:00:30Z"),
            tz="UTC",
            setting=Scheduling(state="on"),
            state={"widgets": {"approved_code_hash": "h"}},
            tables=notes,
        )
    )
    assert due.groups == []
    (held,) = due.held
    assert held[1].code == "TABLE_MISSING" and "croft run widgets --full-refresh" in held[1].reason


# -- the terminal's side ---------------------------------------------------------------------------------


def test_the_question_says_how_many_rows_it_replaces() -> None:
    asked: list[str] = []
    assert not confirm_full_refresh("widgets", 41, ask=lambda q, default: asked.append(q) or default)
    assert "Replace the 41 rows of widgets" in asked[0]
    assert confirm_full_refresh("widgets", None, ask=lambda q, default: asked.append(q) or True)
    assert asked[1] == "widgets has no table now: load it from the source's beginning?"


def test_progress_is_a_bar_on_a_terminal_and_a_line_per_chunk_elsewhere() -> None:
    seen = {
        "asset": "w",
        "chunksDone": 10,
        "chunks": 30,
        "rows": 500,
        "rowsPerSecond": 25.0,
        "secondsLeft": 40.0,
    }
    plain = io.StringIO()
    ChunkProgress(plain, tty=False)(seen)
    assert plain.getvalue() == "w: backfill 10/30 chunks, 500 rows, 25 rows/s, about 40 s left\n"
    bar = io.StringIO()
    ChunkProgress(bar, tty=True)(seen)
    assert (
        bar.getvalue()
        == "\rw [########----------------] 10/30 chunks, 500 rows, 25 rows/s, about 40 s left\x1b[K"
    )


def test_a_hold_lifts_when_the_table_is_found_back_as_croft_left_it(tmp_path: Path) -> None:
    from croft.scheduler.tick.tableholds import still_lost

    path = tmp_path / "w.sqlite"
    with Warehouse(path) as wh:
        wh.write_ingest("widgets", [{"id": 1, "name": "x"}], key="id")
    notes = {"widgets": {"since": "2026-12-01T01:00:30.000Z", "code": "TABLE_MISSING", "message": "gone"}}
    assert still_lost(notes, path, {"widgets": ENTRY}) == {}  # there, with rows: put back
    with Warehouse(path) as wh:
        wh.conn.execute('DROP TABLE "widgets"')
    assert still_lost(notes, path, {"widgets": ENTRY}) == notes
    (tmp_path / "unreadable.sqlite").mkdir()
    assert still_lost(notes, tmp_path / "unreadable.sqlite", {"widgets": ENTRY}) == notes
    assert still_lost(notes, tmp_path / "deleted.sqlite", {"widgets": ENTRY}) == {}  # a plain run loads all


def test_a_transform_whose_table_was_dropped_is_built_again_by_a_plain_run(make_project: Any) -> None:
    root = make_project(
        {
            "assets/rows.py": 'from croft import ingest\n\n\n@ingest(key="id")\ndef rows(ctx):\n'
            '    yield {"id": 1}\n',
            "assets/ids.sql": "-- key: id\nSELECT id FROM rows\n",
        },
        timezone="UTC",
    )
    assert croft(root, "run")[0] == 0
    with Warehouse(root / "warehouse.sqlite") as wh:
        wh.conn.execute('DROP TABLE "ids"')
    code, out = croft(root, "run")
    assert code == 0, out
    ids = next(s for s in out["data"]["steps"] if s["asset"] == "ids")
    assert ids["status"] == "ok" and ids["reason"] == "its table is gone from the warehouse"
    assert [r["id"] for r in table(root, "ids")] == [1]
