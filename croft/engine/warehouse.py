"""The SQLite warehouse: one table per asset, each write a diff committed with its checks, cursor and
bookkeeping in one transaction.

Every data table holds the user's columns plus ``_loaded_at`` (the stamp of the write that last changed
the row: ISO-UTC text with microseconds, strictly increasing per table) and ``_row_hash`` (kept for older
readers, left NULL: rows are compared column by column inside SQLite). A row that comes back unchanged
keeps its stamp, so a re-read window wakes nothing downstream. Rows from Python are staged in a TEMP table
before the write lock is taken; everything in the warehouse file (new columns, rows, checks, cursor and
bookkeeping) happens in one ``BEGIN IMMEDIATE`` transaction, so a crash (even SIGKILL) leaves the table,
cursor and bookkeeping exactly as they were.

Crash tests: ``CROFT_FAULT=before_commit`` (or ``after_stage``) makes the writing process SIGKILL itself at
that point.

This module holds the transaction and the bookkeeping; the parts live beside it: ``writespec`` (what a
write asks for), ``rows`` (stamps, hashes, value conversion), ``staging`` (the TEMP table), ``tablediff``
(staged rows into the table) and ``sqlerrors`` (sqlite3 errors as CroftErrors).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from croft.core import knobs, sqlitefile
from croft.core.clock import now as clock_now
from croft.core.problems import CroftError
from croft.engine.checks import (
    Unique,
    implied_checks,
    is_identifier,
    parse_checks,
    quote,
    read_only,
    run_checks,
)
from croft.engine.cursor import Cursor, CursorTracker, greatest
from croft.engine.reserved import RESERVED_COLUMNS
from croft.engine.rows import format_stamp, next_stamp, row_hash, sql_type
from croft.engine.sqlerrors import BUSY_TIMEOUT_MS, translating
from croft.engine.staging import Stage, StagePlan, dedupe_for, statement_body
from croft.engine.tablediff import apply_staged, create_table, ensure_key_index, fill_from_select, index_table
from croft.engine.writespec import (
    Kind,
    Mode,
    WriteSpec,
    key_tuple,
    require_select,
    require_table_name,
    resolve_mode,
)

__all__ = [
    "DEFAULT_DATABASE",
    "Warehouse",
    "WriteResult",
    "format_stamp",
    "next_stamp",
    "resolve_mode",
    "row_hash",
    "sql_type",
]

DEFAULT_DATABASE = "warehouse.sqlite"

_BOOKKEEPING = (
    """CREATE TABLE IF NOT EXISTS _croft_assets (
        name TEXT PRIMARY KEY, kind TEXT NOT NULL, write_mode TEXT NOT NULL, key_columns TEXT NOT NULL,
        cursor_field TEXT, cursor_value TEXT, cursor_type TEXT, cursor_unit TEXT,
        last_loaded_at TEXT, last_replaced_at TEXT, row_count INTEGER NOT NULL DEFAULT 0,
        code_hash TEXT, updated_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS _croft_inputs (
        asset TEXT NOT NULL, input TEXT NOT NULL, seen_version TEXT, PRIMARY KEY (asset, input))""",
    """CREATE TABLE IF NOT EXISTS _croft_writes (
        asset TEXT NOT NULL, loaded_at TEXT NOT NULL, run_id TEXT, attempt INTEGER, mode TEXT NOT NULL,
        rows_in INTEGER NOT NULL, added INTEGER NOT NULL, updated INTEGER NOT NULL,
        unchanged INTEGER NOT NULL, deleted INTEGER NOT NULL, cursor_before TEXT, cursor_after TEXT,
        code_hash TEXT)""",
    "CREATE INDEX IF NOT EXISTS _croft_writes_asset ON _croft_writes (asset, loaded_at)",
)


@dataclass(frozen=True)
class WriteResult:
    """What one write did. ``changed`` is whether any row was added, updated or deleted (what wakes
    downstream transforms); ``loaded_at`` is the stamp changed rows carry."""

    asset: str
    mode: str
    rows_in: int
    added: int
    updated: int
    unchanged: int
    deleted: int
    cursor_before: Any
    cursor_after: Any
    loaded_at: str
    changed: bool
    row_count: int
    columns_added: tuple[str, ...] = ()
    recreated: bool = False
    committed: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fault(point: str) -> None:
    """Self-kill at a named point when CROFT_FAULT lists it: how crash tests reach the middle of a write."""
    if point in knobs.value("CROFT_FAULT"):
        os.kill(os.getpid(), signal.SIGKILL)


class Warehouse:
    """One SQLite warehouse file. Reads are plain; every write is one transaction (see the module doc).

    A small interface on purpose (write_ingest, write_transform_sql, write_transform_rows, read_rows,
    state, version, columns), so another engine could stand behind it later.
    """

    def __init__(self, path: Path | str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS):
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        with self._translate(None, "opening the warehouse"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # check_same_thread=False: an extraction's worker stages rows on this connection while the
            # opening thread waits for it (see Extraction._pump); no two threads use it at once.
            self.conn = sqlitefile.connect(
                self.path, "create", timeout=busy_timeout_ms / 1000, any_thread=True
            )
            self.conn.execute("PRAGMA journal_mode = WAL")
            if not self._has_bookkeeping():  # only a new warehouse takes the write lock on open
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    for ddl in _BOOKKEEPING:
                        self.conn.execute(ddl)
                    self.conn.execute("COMMIT")
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise

    def _has_bookkeeping(self) -> bool:
        names = {"_croft_assets", "_croft_inputs", "_croft_writes"}
        query = f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({', '.join('?' * 3)})"
        (count,) = self.conn.execute(query, sorted(names)).fetchone()
        return bool(count == len(names))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reads

    def columns(self, table: str) -> list[str]:
        """The table's user columns in table order ([] when there is no such table)."""
        with self._translate(table, "reading columns"):
            rows = self.conn.execute(f"PRAGMA table_info({quote(table)})").fetchall()
        return [row[1] for row in rows if row[1] not in RESERVED_COLUMNS]

    def has_table(self, table: str) -> bool:
        query = "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE"
        return self.conn.execute(query, (table,)).fetchone() is not None

    def read_rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of ``table`` as a dict of user columns, in insertion order (ctx.rows of a transform)."""
        columns = self.columns(table)
        if not columns and not self.has_table(table):
            raise CroftError(
                "INPUT_NOT_BUILT",
                f"Table {table} does not exist in {self.path.name} yet.",
                f"Run `croft run {table}` first, so the input has been built.",
                details={"input": table},
            )
        cols = ", ".join(map(quote, columns))
        with self._translate(table, "reading rows"):
            cursor = self.conn.execute(f"SELECT {cols} FROM {quote(table)} ORDER BY rowid")
            for row in cursor:
                yield dict(zip(columns, row, strict=True))

    def state(self, asset: str) -> dict[str, Any] | None:
        """The bookkeeping row of ``asset`` with JSON decoded (cursor_value, key_columns), or None."""
        with self._translate(asset, "reading bookkeeping"):
            cursor = self.conn.execute("SELECT * FROM _croft_assets WHERE name = ?", (asset,))
            row = cursor.fetchone()
            if row is None:
                return None
            names = [d[0] for d in cursor.description]
        out = dict(zip(names, row, strict=True))
        out["key_columns"] = json.loads(out["key_columns"] or "[]")
        out["cursor_value"] = json.loads(out["cursor_value"]) if out["cursor_value"] is not None else None
        return out

    def version(self, asset: str) -> str | None:
        """The data version of a table: the later of its last load and its last out-of-band replacement."""
        row = self.conn.execute(
            "SELECT last_loaded_at, last_replaced_at FROM _croft_assets WHERE name = ?", (asset,)
        ).fetchone()
        if row is None:
            return None
        stamps = [s for s in row if s]
        return max(stamps) if stamps else None

    def inputs_seen(self, asset: str) -> dict[str, str | None]:
        """``{input: the version this transform last read}``."""
        rows = self.conn.execute(
            "SELECT input, seen_version FROM _croft_inputs WHERE asset = ? ORDER BY input", (asset,)
        )
        return dict(rows.fetchall())

    def writes(self, asset: str) -> list[dict[str, Any]]:
        """Every recorded write of ``asset``, oldest first (what reconcile matches crashed steps against)."""
        cursor = self.conn.execute("SELECT * FROM _croft_writes WHERE asset = ? ORDER BY loaded_at", (asset,))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]

    # ------------------------------------------------------------------ writes

    def write_ingest(
        self,
        asset: str,
        rows: Iterable[Any],
        *,
        mode: Mode | None = None,
        key: str | Sequence[str] | None = None,
        cursor_field: str | None = None,
        cursor_unit: str | None = None,
        checks: Sequence[Any] = (),
        run_id: str | None = None,
        attempt: int | None = None,
        code_hash: str | None = None,
        now: datetime | None = None,
        commit: bool = True,
        full_refresh: bool = False,
    ) -> WriteResult:
        """Write an ingest's rows (dicts, or lists of dicts as batches). ``mode`` None infers it from key
        and cursor; ``commit=False`` does the whole write, checks included, then rolls back (a preview).
        ``full_refresh`` replaces the table and its cursor whole with these rows (see WriteSpec)."""
        keys = key_tuple(key)
        spec = WriteSpec(
            asset, "ingest", resolve_mode(mode, keys, cursor_field, asset), keys, tuple(checks),
            cursor_field, cursor_unit, None, run_id, attempt, code_hash, now, commit, full_refresh,
        )  # fmt: skip
        return self._write(spec, rows, declared=None)

    def write_transform_rows(
        self,
        asset: str,
        rows: Iterable[Any],
        *,
        key: str | Sequence[str] | None = None,
        checks: Sequence[Any] = (),
        inputs: Sequence[str] | Mapping[str, str | None] | None = None,
        run_id: str | None = None,
        attempt: int | None = None,
        code_hash: str | None = None,
        now: datetime | None = None,
        commit: bool = True,
        kind: Kind = "python",
    ) -> WriteResult:
        """A Python transform's full output, written as a diff (by key, else by content).

        ``inputs`` is a list (their versions are read now, in the write transaction) or a mapping of
        input -> the version read when the transform read it.
        """
        keys = key_tuple(key)
        spec = WriteSpec(
            asset, kind, "replace", keys, tuple(checks), None, None, inputs if inputs is not None else (),
            run_id, attempt, code_hash, now, commit,
        )  # fmt: skip
        return self._write(spec, rows, declared=None)

    def write_transform_sql(
        self,
        asset: str,
        sql: str,
        *,
        key: str | Sequence[str] | None = None,
        checks: Sequence[Any] = (),
        inputs: Sequence[str] | Mapping[str, str | None] | None = None,
        run_id: str | None = None,
        attempt: int | None = None,
        code_hash: str | None = None,
        now: datetime | None = None,
        commit: bool = True,
    ) -> WriteResult:
        """Run one SELECT read-only and write its result as a diff. Without ``inputs``, the tables the
        SELECT read are recorded as its inputs."""
        keys = key_tuple(key)
        require_select(asset, sql)
        spec = WriteSpec(
            asset, "sql", "replace", keys, tuple(checks), None, None, inputs, run_id, attempt, code_hash, now,
            commit,
        )  # fmt: skip
        return self._write(spec, None, declared=sql)

    # ------------------------------------------------------------------ the one write path

    def _write(self, spec: WriteSpec, rows: Iterable[Any] | None, *, declared: str | None) -> WriteResult:
        """Stage, then diff and commit. Rows from Python are staged before the write lock is taken (the
        TEMP table is this connection's own), so a slow source never holds the warehouse; a SELECT is
        staged inside the write transaction, so the input versions it records are the ones it read."""
        require_table_name(spec.asset)
        checks = parse_checks(spec.checks)  # before BEGIN: a bad check text fails without touching anything
        conn = self.conn
        with self._translate(spec.asset, f"writing {spec.asset}"):
            saved = self.state(spec.asset)
            stage = Stage(conn, self._stage_plan(spec, saved))
            shape = self._shape_of(spec.asset)
            try:
                if declared is None:
                    assert rows is not None
                    conn.execute("BEGIN")  # writes only the TEMP database: no lock on the warehouse
                    stage.open(*shape)
                    stage.feed(rows)
                    staged = stage.finish()
                    conn.execute("COMMIT")
                    conn.execute("BEGIN IMMEDIATE")
                    saved = self.state(spec.asset)  # as it is now, under the lock
                else:
                    stage.drop()  # an earlier write's stage goes before the lock is taken (see below)
                    conn.execute("BEGIN IMMEDIATE")
                    stage.open(*self._shape_of(spec.asset))  # re-read under the lock
                    reads = self._stage_select(stage, spec.asset, declared)
                    staged = stage.finish()
                    if spec.inputs is None:
                        spec = replace(spec, inputs=sorted(reads - {spec.asset}))
                result = self._write_in_transaction(spec, stage, staged, saved, checks, declared is not None)
                # A written stage is left in place: freeing its pages one by one (and journaling that)
                # cost 0.4 s at a million rows, and the TEMP file goes whole when the connection closes.
                # The next write drops it before it takes the lock.
                if spec.commit:
                    _fault("before_commit")
                    conn.execute("COMMIT")
                else:
                    conn.execute("ROLLBACK")
                    result = replace(result, committed=False)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                stage.drop()
                raise
        return result

    def _stage_plan(self, spec: WriteSpec, saved: dict[str, Any] | None) -> StagePlan:
        tracker = None
        if spec.cursor_field:
            carried = None if spec.full_refresh else _saved_cursor(saved)
            tracker = CursorTracker(spec.cursor_field, carried, spec.cursor_unit)  # type: ignore[arg-type]
        return StagePlan(
            spec.asset,
            spec.key,
            dedupe_for(spec.mode, spec.key),
            tracker,
            drop_reserved=spec.kind != "ingest",
        )

    def _shape_of(self, table: str) -> tuple[list[str], dict[str, str]]:
        """The table's user columns and their declared types (none when there is no table)."""
        info = self.conn.execute(f"PRAGMA table_info({quote(table)})").fetchall()
        kept = [row for row in info if row[1] not in RESERVED_COLUMNS]
        return [row[1] for row in kept], {row[1]: row[2] for row in kept}

    def _stage_select(self, stage: Stage, asset: str, sql: str) -> set[str]:
        """Check the SELECT under the read-only guard (compiled, not run), then run it into the stage."""
        reads: set[str] = set()
        body = statement_body(sql)
        with (
            self._translate(asset, f"running the SELECT of {asset}", user_sql=True),
        ):
            with read_only(self.conn, reads):
                self.conn.execute(f"EXPLAIN {sql}").fetchall()  # compiling is what the guard sees
                cursor = self.conn.execute(f"SELECT * FROM (\n{body}\n) LIMIT 0")
            if cursor.description is None:  # pragma: no cover - a SELECT always has columns
                raise CroftError(
                    "SQL_NOT_SELECT",
                    f"{asset}.sql returns no columns.",
                    "The body of a SQL asset is one SELECT (CTEs allowed).",
                    asset=asset,
                )
            names = [d[0] for d in cursor.description]
            if not all(is_identifier(n) for n in names):  # SQLite renames repeats as "id:1": ask the SELECT
                with read_only(self.conn):
                    names = [d[0] for d in self.conn.execute(sql).description]
            _require_output_names(asset, names)
            if self.has_table(asset) or not stage.defer_select(body, names):
                stage.from_select(body, names)
        return reads

    def _write_in_transaction(
        self,
        spec: WriteSpec,
        stage: Stage,
        staged: int,
        saved: dict[str, Any] | None,
        checks: list[Any],
        declared: bool,
    ) -> WriteResult:
        conn = self.conn
        table = spec.asset
        saved_cursor = _saved_cursor(saved)
        existing = self.columns(table) if self.has_table(table) else None
        replaced_rows = 0
        if spec.full_refresh and existing is not None:
            # The old table goes inside this transaction: until COMMIT every reader sees it as it was,
            # and a failure, a check or a kill before then leaves it there (ROLLBACK / the journal).
            (replaced_rows,) = conn.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
            conn.execute(f"DROP TABLE {quote(table)}")
            existing = None
        existed = existing is not None and not (
            spec.kind != "ingest" and self._must_recreate(existing, stage, saved, spec, declared)
        )
        if existed:  # a new table finds repeated keys itself, when its key index is built
            failure = stage.duplicate_failure()
            if failure is not None:
                raise failure
        tracker = stage.plan.cursor
        if tracker is not None and stage.rows_in and not stage.cursor_field_seen:
            raise CroftError(
                "CURSOR_INVALID",
                f"No row of {spec.asset} has the incremental field {spec.cursor_field!r}.",
                f"Yield {spec.cursor_field!r} in every row, or point incremental= at a field the rows have.",
                asset=spec.asset,
                details={"field": spec.cursor_field, "columns": stage.columns},
            )
        if spec.full_refresh:
            new_cursor = tracker.loaded() if tracker is not None else None
        else:
            new_cursor = greatest(saved_cursor, tracker.loaded()) if tracker is not None else saved_cursor
        _fault("after_stage")

        # Shape: create, recreate (a transform whose columns or key changed), or add new columns.
        recreated = False
        old_rows = 0
        saved_key = tuple(saved["key_columns"]) if saved else ()
        if existing is not None and spec.kind != "ingest":
            if self._must_recreate(existing, stage, saved, spec, declared):
                (old_rows,) = conn.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
                conn.execute(f"DROP TABLE {quote(table)}")
                existing, recreated = None, True
        elif (
            existing is not None
            and saved is not None
            and saved_key != spec.key
            and saved["row_count"]
            and not spec.full_refresh
        ):
            raise CroftError(
                "ASSET_INVALID",
                f"The key of {spec.asset} changed from {list(saved_key)} to {list(spec.key)}, but its table "
                "already holds rows keyed the old way.",
                f"Put the key back as it was, or start the table over with the new key: "
                f"`croft run {spec.asset} --full-refresh`.",
                asset=spec.asset,
                details={"saved_key": list(saved_key), "key": list(spec.key)},
            )
        columns_added: list[str] = []
        if existing is None:
            create_table(conn, table, stage)
            table_columns = list(stage.columns)
        else:
            known = {c.lower() for c in existing}
            for name in stage.columns:
                if name.lower() not in known:
                    conn.execute(
                        f"ALTER TABLE {quote(table)} ADD COLUMN {quote(name)} {stage.types[name]}".rstrip()
                    )
                    columns_added.append(name)
            table_columns = existing + columns_added
            ensure_key_index(conn, table, spec)

        previous = [saved["last_loaded_at"] if saved else None]
        previous += conn.execute(
            "SELECT MAX(loaded_at) FROM _croft_writes WHERE asset = ?", (table,)
        ).fetchone()
        previous += conn.execute(f'SELECT MAX("_loaded_at") FROM {quote(table)}').fetchone()
        stamp = next_stamp(spec.now or clock_now(), previous)

        fresh = existing is None  # a table made by this write: every staged row is simply added
        if stage.deferred is not None:  # its rows come straight from the SELECT (see Stage.defer_select)
            added, updated, deleted = (
                fill_from_select(conn, table, table_columns, stage.deferred, stamp),
                0,
                0,
            )
            staged = stage.rows_in = added
        else:
            added, updated, deleted = apply_staged(
                conn, table, table_columns, stage.columns, spec, stamp, fresh=fresh
            )
        if fresh:
            try:
                index_table(conn, table, spec)
            except sqlite3.IntegrityError:
                found = stage.duplicate_failure(quote(table), "rowid") if stage.deferred else None
                raise (
                    found
                    or stage.duplicate_failure()
                    or CroftError(
                        "INTERNAL_ERROR", f"The key index of {table} could not be built.", "Report it."
                    )
                ) from None
        if recreated:
            deleted = old_rows
        if spec.full_refresh:
            recreated, deleted = True, replaced_rows
        unchanged = staged - added - updated

        all_checks = [*implied_checks(spec.key), *checks]
        if spec.mode != "append":  # the key's unique index already answers unique(key)
            all_checks = [c for c in all_checks if not _answered_by_key_index(c, spec.key)]
        run_checks(conn, table, all_checks, stamp=stamp, columns=table_columns, asset=spec.asset)

        changed = bool(added or updated or deleted or recreated)
        (row_count,) = conn.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
        cursor_before = saved_cursor.value if saved_cursor else None
        cursor_after = new_cursor.value if new_cursor else None
        self._save_state(spec, saved, new_cursor, stamp if changed else None, row_count)
        conn.execute(
            "INSERT INTO _croft_writes (asset, loaded_at, run_id, attempt, mode, rows_in, added, updated,"
            " unchanged, deleted, cursor_before, cursor_after, code_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                spec.asset, stamp, spec.run_id, spec.attempt, spec.mode, stage.rows_in, added, updated,
                unchanged, deleted, _json(cursor_before), _json(cursor_after), spec.code_hash,
            ),
        )  # fmt: skip
        if spec.kind != "ingest":
            self._save_inputs(spec)
        return WriteResult(
            asset=spec.asset, mode=spec.mode, rows_in=stage.rows_in, added=added, updated=updated,
            unchanged=unchanged, deleted=deleted, cursor_before=cursor_before, cursor_after=cursor_after,
            loaded_at=stamp, changed=changed, row_count=row_count, columns_added=tuple(columns_added),
            recreated=recreated,
        )  # fmt: skip

    @staticmethod
    def _must_recreate(
        existing: list[str], stage: Stage, saved: dict[str, Any] | None, spec: WriteSpec, declared: bool
    ) -> bool:
        """A transform whose columns or key changed is rebuilt rather than diffed."""
        saved_key = tuple(saved["key_columns"]) if saved else ()
        shape_changed = {c.lower() for c in existing} != {c.lower() for c in stage.columns}
        return bool((shape_changed and (stage.columns or declared)) or saved_key != spec.key)

    def _save_state(
        self,
        spec: WriteSpec,
        saved: dict[str, Any] | None,
        cursor: Cursor | None,
        loaded_at: str | None,
        row_count: int,
    ) -> None:
        last_loaded = loaded_at or (saved["last_loaded_at"] if saved else None)
        self.conn.execute(
            """INSERT INTO _croft_assets (name, kind, write_mode, key_columns, cursor_field, cursor_value,
                   cursor_type, cursor_unit, last_loaded_at, last_replaced_at, row_count, code_hash,
                   updated_at)
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, write_mode = excluded.write_mode,
                   key_columns = excluded.key_columns, cursor_field = excluded.cursor_field,
                   cursor_value = excluded.cursor_value, cursor_type = excluded.cursor_type,
                   cursor_unit = excluded.cursor_unit, last_loaded_at = excluded.last_loaded_at,
                   row_count = excluded.row_count, code_hash = excluded.code_hash,
                   updated_at = excluded.updated_at""",
            (
                spec.asset, spec.kind, spec.mode, json.dumps(list(spec.key)), spec.cursor_field,
                _json(cursor.value) if cursor else None, cursor.type if cursor else None,
                cursor.unit if cursor else None, last_loaded, saved["last_replaced_at"] if saved else None,
                row_count, spec.code_hash, format_stamp(spec.now or clock_now()),
            ),
        )  # fmt: skip

    def _save_inputs(self, spec: WriteSpec) -> None:
        inputs = spec.inputs or ()
        seen = dict(inputs) if isinstance(inputs, Mapping) else {name: self.version(name) for name in inputs}
        self.conn.execute("DELETE FROM _croft_inputs WHERE asset = ?", (spec.asset,))
        self.conn.executemany(
            "INSERT INTO _croft_inputs (asset, input, seen_version) VALUES (?, ?, ?)",
            [(spec.asset, name, version) for name, version in sorted(seen.items())],
        )

    # ------------------------------------------------------------------ the sqlite3 boundary

    def _translate(
        self, asset: str | None, what: str, *, user_sql: bool = False
    ) -> AbstractContextManager[None]:
        """sqlite3 errors inside the block come out as CroftErrors naming this warehouse file."""
        return translating(self.path, asset, what, user_sql=user_sql, waited_ms=self.busy_timeout_ms)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _require_output_names(asset: str, names: list[str]) -> None:
    """Each output column needs its own plain name: it becomes a column of the table."""
    lowered = [n.lower() for n in names]
    duplicated = sorted({n for n in names if lowered.count(n.lower()) > 1})
    if duplicated:
        raise CroftError(
            "SQL_ERROR",
            f"{asset}.sql returns the column name(s) {', '.join(duplicated)} more than once.",
            "Give each output column its own name with AS.",
            asset=asset,
            details={"columns": duplicated},
        )
    for name in names:
        if not is_identifier(name):
            raise CroftError(
                "SQL_ERROR",
                f"{asset}.sql returns a column named {name!r}, which croft cannot use as a column name.",
                f"Name it with AS, for example `{name} AS total`.",
                asset=asset,
                details={"column": name},
            )


def _answered_by_key_index(check: Any, key: Sequence[str]) -> bool:
    """unique() over exactly the key columns: the UNIQUE index makes a duplicate impossible."""
    return isinstance(check, Unique) and {c.lower() for c in check.columns} == {k.lower() for k in key}


def _saved_cursor(saved: dict[str, Any] | None) -> Cursor | None:
    if not saved or saved.get("cursor_value") is None or not saved.get("cursor_type"):
        return None
    return Cursor(saved["cursor_value"], saved["cursor_type"], saved.get("cursor_unit"))
