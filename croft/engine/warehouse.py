"""The SQLite warehouse: one table per asset, each write a diff committed with its checks, cursor and
bookkeeping in one transaction.

Every data table holds the user's columns plus ``_loaded_at`` (the stamp of the write that last changed
the row: ISO-UTC text with microseconds, strictly increasing per table) and ``_row_hash`` (sha256 of the
row's canonical JSON). Writes compare hashes, so a row that comes back unchanged keeps its stamp and a
re-read window wakes nothing downstream. Nothing commits before the final COMMIT: staging, new columns,
rows, checks, cursor and bookkeeping all live in one ``BEGIN IMMEDIATE`` transaction, so a crash (even
SIGKILL) leaves the table, cursor and bookkeeping exactly as they were.

Crash tests: ``CROFT_FAULT=before_commit`` (or ``after_stage``) makes the writing process SIGKILL itself at
that point.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Literal

from croft.core.clock import now as clock_now
from croft.core.problems import CroftError
from croft.engine.checks import implied_checks, is_identifier, parse_checks, quote, read_only, run_checks
from croft.engine.cursor import Cursor, CursorTracker, parse_timestamp

__all__ = [
    "DEFAULT_DATABASE",
    "Warehouse",
    "WriteResult",
    "format_stamp",
    "next_stamp",
    "row_hash",
    "sql_type",
]

DEFAULT_DATABASE = "warehouse.sqlite"
BUSY_TIMEOUT_MS = 5000
Mode = Literal["replace", "merge", "append"]
Kind = Literal["ingest", "sql", "python"]

RESERVED_COLUMNS = frozenset({"_loaded_at", "_row_hash"})
ROWID_NAMES = frozenset({"rowid", "oid", "_rowid_"})  # a column with one of these names hides the rowid
STAGE = 'temp."_croft_stage"'
SEQ = '"_croft_seq"'
FLUSH_EVERY = 500
INT_RANGE = (-(2**63), 2**63 - 1)
STATEMENT_START = re.compile(r"^\s*(?:(?:--[^\n]*(?:\n|$))|(?:/\*.*?\*/)|\s)*(\w+)", re.DOTALL)

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


# ---------------------------------------------------------------------------------------------- pure parts


def format_stamp(moment: datetime) -> str:
    """ISO-UTC with microseconds and ``Z``: fixed width, so text order is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def next_stamp(now: datetime, previous: Iterable[str | None]) -> str:
    """The stamp for a new write: now, or 1 µs after the latest earlier stamp if now is not later."""
    stamp = now.astimezone(UTC)
    for text in previous:
        if text:
            earlier = parse_timestamp(text)
            if earlier is not None and earlier + timedelta(microseconds=1) > stamp:
                stamp = earlier + timedelta(microseconds=1)
    return format_stamp(stamp)


def sql_type(value: Any) -> str:
    """The SQLite column type for a (converted) Python value; '' for None (no affinity)."""
    if value is None:
        return ""
    if isinstance(value, bool | int):
        return "INTEGER"
    if isinstance(value, float):
        return "REAL"
    if isinstance(value, bytes):
        return "BLOB"
    return "TEXT"


def _hash_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    raise TypeError(type(value).__name__)


# Built once: json.dumps with options builds a new encoder per call, which shows at 100k rows.
_HASH_JSON = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_hash_default
)
_VALUE_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def row_hash(values: Mapping[str, Any]) -> str:
    """sha256 of the row's canonical JSON. NULLs are left out, so a column added later (NULL in old rows)
    does not make old rows look changed."""
    present = {k: v for k, v in values.items() if v is not None}
    return hashlib.sha256(_HASH_JSON.encode(present).encode()).hexdigest()


def _convert(value: Any) -> Any:
    """A Python value as SQLite stores it; raises TypeError/OverflowError for what it cannot hold."""
    if value is None or isinstance(value, str | float | bytes):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if not INT_RANGE[0] <= value <= INT_RANGE[1]:
            raise OverflowError("an integer beyond 64 bits")
        return value
    if isinstance(value, dict | list | tuple):
        return _VALUE_JSON.encode(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    raise TypeError(f"a {type(value).__name__}")


def _fault(point: str) -> None:
    """Self-kill at a named point when CROFT_FAULT lists it: how crash tests reach the middle of a write."""
    wanted = os.environ.get("CROFT_FAULT", "")
    if point in {part.strip() for part in wanted.split(",")}:
        os.kill(os.getpid(), signal.SIGKILL)


def _row_invalid(asset: str, message: str, hint: str, **details: Any) -> CroftError:
    return CroftError("ROW_INVALID", message, hint, asset=asset, details=details or None)


# ---------------------------------------------------------------------------------------------- staging


@dataclass
class _StagePlan:
    asset: str
    key: tuple[str, ...]
    dedupe: Literal["cursor", "unique", "none"]
    cursor: CursorTracker | None
    drop_reserved: bool  # transforms drop _loaded_at/_row_hash copied from inputs; ingests may not send them


@dataclass
class _Stage:
    """This write's rows in a TEMP table (created inside the write transaction), columns grown on demand.

    Column names are matched case-insensitively (as SQLite does) and kept in first-seen spelling.
    """

    conn: sqlite3.Connection
    plan: _StagePlan
    columns: list[str] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    rows_in: int = 0
    cursor_field_seen: bool = False
    _by_lower: dict[str, str] = field(default_factory=dict)
    _names: dict[Any, str | None] = field(default_factory=dict)  # row key -> column, once checked
    _buffer: list[tuple[int, tuple[str, ...], tuple[Any, ...]]] = field(default_factory=list)
    _winners: dict[tuple[Any, ...], tuple[int, Any]] = field(default_factory=dict)
    _losers: list[int] = field(default_factory=list)
    _duplicates: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def open(self, known_columns: Sequence[str]) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {STAGE}")
        self.conn.execute(f'CREATE TEMP TABLE "_croft_stage" ({SEQ} INTEGER PRIMARY KEY, "_row_hash" TEXT)')
        for name in known_columns:
            self._by_lower.setdefault(name.lower(), name)
        self.declare(self.plan.key)  # so keyed SQL works even when the load has no row

    def declare(self, names: Sequence[str]) -> None:
        """Columns a SQL transform's SELECT returns, known even when it returns no row."""
        for name in names:
            self._column(name, 0)

    def _column(self, name: Any, index: int) -> str | None:
        """The canonical column for a row key; None when the key is a reserved column a transform drops."""
        try:
            return self._names[name]
        except (KeyError, TypeError):
            pass
        column = self._new_column(name, index)
        self._names[name] = column
        return column

    def _new_column(self, name: Any, index: int) -> str | None:
        if not isinstance(name, str) or not is_identifier(name):
            raise _row_invalid(
                self.plan.asset,
                f"Row {index} of {self.plan.asset} has the column name {name!r}, which croft cannot use.",
                "Column names are letters, digits and underscores, not starting with a digit; rename the "
                'field in the asset code (for example row["created_at"] = row.pop("created-at")).',
                row=index,
                column=str(name),
            )
        lower = name.lower()
        if lower in RESERVED_COLUMNS or lower in ROWID_NAMES or lower.startswith("_croft"):
            if self.plan.drop_reserved and lower in RESERVED_COLUMNS:
                return None
            raise _row_invalid(
                self.plan.asset,
                f"Row {index} of {self.plan.asset} has a column named {name!r}, which croft keeps "
                "for itself.",
                "Rename the field in the asset code; _loaded_at, _row_hash, rowid, oid and _croft* are "
                "reserved.",
                row=index,
                column=name,
            )
        canonical = self._by_lower.setdefault(lower, name)
        if canonical not in self.types:
            self.conn.execute(f"ALTER TABLE {STAGE} ADD COLUMN {quote(canonical)}")
            self.columns.append(canonical)
            self.types[canonical] = ""
        return canonical

    def add(self, row: Any, index: int) -> None:
        asset = self.plan.asset
        if not isinstance(row, Mapping):
            raise _row_invalid(
                asset,
                f"Row {index} of {asset} is a {type(row).__name__}, not a dict.",
                "Yield dicts (one row each) or lists of dicts (a batch).",
                row=index,
            )
        values: dict[str, Any] = {}
        for name, raw in row.items():
            column = self._column(name, index)
            if column is None:
                continue
            if column in values:
                raise _row_invalid(
                    asset,
                    f"Row {index} of {asset} has column {column!r} twice (names differ only in case).",
                    "SQLite column names ignore case; keep one of them.",
                    row=index,
                    column=column,
                )
            try:
                value = _convert(raw)
            except (TypeError, OverflowError) as exc:
                raise _row_invalid(
                    asset,
                    f"Row {index} of {asset} has {exc} in column {column!r}, which SQLite cannot store.",
                    "Convert it in the asset code: numbers, text, booleans, None, dicts and lists are stored "
                    "(big integers and decimals as str).",
                    row=index,
                    column=column,
                ) from None
            values[column] = value
            if value is not None and not self.types[column]:
                self.types[column] = sql_type(value)
        key = self._key_of(values, index)
        seq = self.rows_in
        self.rows_in += 1
        rank = None
        if self.plan.cursor is not None:
            name = self._by_lower.get(self.plan.cursor.field.lower())
            if name is not None and name in values:
                self.cursor_field_seen = True
            rank = self.plan.cursor.add(values.get(name) if name else None)
        if key is not None and not self._keep(key, seq, rank):
            return
        names = tuple(values)
        self._buffer.append((seq, names, (row_hash(values), *values.values())))
        if len(self._buffer) >= FLUSH_EVERY:
            self.flush()

    def _key_of(self, values: dict[str, Any], index: int) -> tuple[Any, ...] | None:
        if not self.plan.key:
            return None
        key = []
        for name in self.plan.key:
            value = values.get(self._by_lower.get(name.lower(), name))
            if value is None:
                raise _row_invalid(
                    self.plan.asset,
                    f"Row {index} of {self.plan.asset} has no value for key column {name!r}.",
                    f"Every row needs {name!r}; drop rows without it in the asset code, or pick another key.",
                    row=index,
                    column=name,
                )
            key.append(value)
        return tuple(key)

    def _keep(self, key: tuple[Any, ...], seq: int, rank: tuple[str, Any] | None) -> bool:
        """Within one batch a key appears once: merge keeps the highest cursor then the last yielded;
        replace counts duplicates (reported as a failed unique check); append keeps everything."""
        mode = self.plan.dedupe
        if mode == "none":
            return True
        previous = self._winners.get(key)
        if previous is None:
            self._winners[key] = (seq, rank)
            return True
        if mode == "unique":
            self._duplicates[key] = self._duplicates.get(key, 1) + 1
            return True
        if _ranks_below(rank, previous[1]):
            return False
        self._losers.append(previous[0])
        self._winners[key] = (seq, rank)
        return True

    def flush(self) -> None:
        grouped: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for seq, names, values in self._buffer:
            grouped.setdefault(names, []).append((seq, *values))
        for names, batch in grouped.items():
            cols = ", ".join([SEQ, '"_row_hash"', *map(quote, names)])
            marks = ", ".join("?" * (len(names) + 2))
            self.conn.executemany(f"INSERT INTO {STAGE} ({cols}) VALUES ({marks})", batch)
        self._buffer.clear()

    def finish(self) -> int:
        """Flush, drop losing duplicates; returns the number of staged rows."""
        self.flush()
        for start in range(0, len(self._losers), FLUSH_EVERY):
            chunk = self._losers[start : start + FLUSH_EVERY]
            self.conn.execute(f"DELETE FROM {STAGE} WHERE {SEQ} IN ({', '.join('?' * len(chunk))})", chunk)
        (count,) = self.conn.execute(f"SELECT COUNT(*) FROM {STAGE}").fetchone()
        return int(count)

    def duplicate_failure(self) -> CroftError | None:
        if not self._duplicates:
            return None
        listed = ", ".join(self.plan.key)
        check = f"unique({listed})"
        sample = [
            {**dict(zip(self.plan.key, key, strict=True)), "count": count}
            for key, count in list(self._duplicates.items())[:5]
        ]
        return CroftError(
            "CHECK_FAILED",
            f"Check {check} on {self.plan.asset} failed: {len(self._duplicates)} key value(s) appear "
            "more than once in this load; nothing was written.",
            f"A replace with key={list(self.plan.key)!r} needs each key once. Fix the source or the key; for "
            "an incremental source that re-sends rows, add incremental= so croft merges them.",
            asset=self.plan.asset,
            details={"check": check, "failing": sum(self._duplicates.values()), "sample": sample},
        )


def _ranks_below(rank: Any, best: Any) -> bool:
    """Whether a duplicate's cursor is lower than the current winner's (ties go to the later row)."""
    if rank is None:
        return best is not None
    if best is None or rank[0] != best[0]:
        return False
    try:
        return bool(rank[1] < best[1])
    except TypeError:
        return False


# ---------------------------------------------------------------------------------------------- the warehouse


@dataclass(frozen=True)
class _WriteSpec:
    asset: str
    kind: Kind
    mode: Mode
    key: tuple[str, ...]
    checks: tuple[Any, ...]
    cursor_field: str | None
    cursor_unit: str | None
    inputs: Sequence[str] | Mapping[str, str | None] | None
    run_id: str | None
    attempt: int | None
    code_hash: str | None
    now: datetime | None
    commit: bool


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
            self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=busy_timeout_ms / 1000)
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
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
    ) -> WriteResult:
        """Write an ingest's rows (dicts, or lists of dicts as batches). ``mode`` None infers it from key
        and cursor; ``commit=False`` does the whole write, checks included, then rolls back (a preview)."""
        keys = _key_tuple(key)
        spec = _WriteSpec(
            asset, "ingest", resolve_mode(mode, keys, cursor_field, asset), keys, tuple(checks),
            cursor_field, cursor_unit, None, run_id, attempt, code_hash, now, commit,
        )  # fmt: skip
        return self._write(spec, _flatten(rows), declared=None)

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
        keys = _key_tuple(key)
        spec = _WriteSpec(
            asset, kind, "replace", keys, tuple(checks), None, None, inputs if inputs is not None else (),
            run_id, attempt, code_hash, now, commit,
        )  # fmt: skip
        return self._write(spec, _flatten(rows), declared=None)

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
        keys = _key_tuple(key)
        _require_select(asset, sql)
        spec = _WriteSpec(
            asset, "sql", "replace", keys, tuple(checks), None, None, inputs, run_id, attempt, code_hash, now,
            commit,
        )  # fmt: skip
        return self._write(spec, None, declared=sql)

    # ------------------------------------------------------------------ the one write path

    def _write(self, spec: _WriteSpec, rows: Iterable[Any] | None, *, declared: str | None) -> WriteResult:
        _require_table_name(spec.asset)
        checks = parse_checks(spec.checks)  # before BEGIN: a bad check text fails without touching anything
        with self._translate(spec.asset, f"writing {spec.asset}"):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                if declared is not None:
                    names, rows, reads = self._run_select(spec.asset, declared)
                    if spec.inputs is None:
                        spec = _replace_inputs(spec, sorted(reads - {spec.asset}))
                else:
                    names = None
                assert rows is not None
                result = self._write_in_transaction(spec, rows, names, checks)
                self.conn.execute(f"DROP TABLE IF EXISTS {STAGE}")
                if spec.commit:
                    _fault("before_commit")
                    self.conn.execute("COMMIT")
                else:
                    self.conn.execute("ROLLBACK")
                    result = _replace_committed(result)
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
        return result

    def _run_select(self, asset: str, sql: str) -> tuple[list[str], list[dict[str, Any]], set[str]]:
        reads: set[str] = set()
        with (
            self._translate(asset, f"running the SELECT of {asset}", user_sql=True),
            read_only(self.conn, reads),
        ):
            cursor = self.conn.execute(sql)
            if cursor.description is None:
                raise CroftError(
                    "SQL_NOT_SELECT",
                    f"{asset}.sql returns no columns.",
                    "The body of a SQL asset is one SELECT (CTEs allowed).",
                    asset=asset,
                )
            names = [d[0] for d in cursor.description]
            data = cursor.fetchall()
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
        return names, [dict(zip(names, row, strict=True)) for row in data], reads

    def _write_in_transaction(
        self, spec: _WriteSpec, rows: Iterable[Any], declared: list[str] | None, checks: list[Any]
    ) -> WriteResult:
        conn = self.conn
        table = spec.asset
        saved = self.state(spec.asset)
        saved_cursor = _saved_cursor(saved)
        existing = self.columns(table) if self.has_table(table) else None

        tracker = None
        if spec.cursor_field:
            tracker = CursorTracker(spec.cursor_field, saved_cursor, spec.cursor_unit)  # type: ignore[arg-type]
        plan = _StagePlan(spec.asset, spec.key, _dedupe(spec), tracker, drop_reserved=spec.kind != "ingest")
        stage = _Stage(conn, plan)
        stage.open(existing or [])
        if declared is not None:
            stage.declare([n for n in declared if n.lower() not in RESERVED_COLUMNS])
        for index, row in enumerate(rows):
            stage.add(row, index)
        staged = stage.finish()
        failure = stage.duplicate_failure()
        if failure is not None:
            raise failure
        if tracker is not None and stage.rows_in and not stage.cursor_field_seen:
            raise CroftError(
                "CURSOR_INVALID",
                f"No row of {spec.asset} has the incremental field {spec.cursor_field!r}.",
                f"Yield {spec.cursor_field!r} in every row, or point incremental= at a field the rows have.",
                asset=spec.asset,
                details={"field": spec.cursor_field, "columns": stage.columns},
            )
        new_cursor = tracker.result() if tracker is not None else saved_cursor
        _fault("after_stage")

        # Shape: create, recreate (a transform whose columns or key changed), or add new columns.
        recreated = False
        old_rows = 0
        saved_key = tuple(saved["key_columns"]) if saved else ()
        if existing is not None and spec.kind != "ingest":
            shape_changed = {c.lower() for c in existing} != {c.lower() for c in stage.columns}
            if (shape_changed and (stage.columns or declared is not None)) or saved_key != spec.key:
                (old_rows,) = conn.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
                conn.execute(f"DROP TABLE {quote(table)}")
                existing, recreated = None, True
        elif existing is not None and saved is not None and saved_key != spec.key and saved["row_count"]:
            raise CroftError(
                "ASSET_INVALID",
                f"The key of {spec.asset} changed from {list(saved_key)} to {list(spec.key)}, but its table "
                "already holds rows keyed the old way.",
                f"Put the key back, or rebuild the table (`croft run {spec.asset} --rebuild`).",
                asset=spec.asset,
                details={"saved_key": list(saved_key), "key": list(spec.key)},
            )
        columns_added: list[str] = []
        if existing is None:
            self._create_table(table, stage, spec)
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
            self._ensure_key_index(table, spec)

        previous = [saved["last_loaded_at"] if saved else None]
        previous += conn.execute(
            "SELECT MAX(loaded_at) FROM _croft_writes WHERE asset = ?", (table,)
        ).fetchone()
        previous += conn.execute(f'SELECT MAX("_loaded_at") FROM {quote(table)}').fetchone()
        stamp = next_stamp(spec.now or clock_now(), previous)

        added, updated, deleted = self._apply(table, table_columns, stage.columns, spec, stamp)
        if recreated:
            deleted = old_rows
        unchanged = staged - added - updated

        all_checks = [*implied_checks(spec.key), *checks]
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

    def _create_table(self, table: str, stage: _Stage, spec: _WriteSpec) -> None:
        defs = [f"{quote(c)} {stage.types[c]}".rstrip() for c in stage.columns]
        defs += ['"_loaded_at" TEXT NOT NULL', '"_row_hash" TEXT NOT NULL']
        self.conn.execute(f"CREATE TABLE {quote(table)} ({', '.join(defs)})")
        self.conn.execute(f'CREATE INDEX {quote("_croft_stamp_" + table)} ON {quote(table)} ("_loaded_at")')
        self._ensure_key_index(table, spec)

    def _ensure_key_index(self, table: str, spec: _WriteSpec) -> None:
        """A UNIQUE index on the key (what ON CONFLICT needs); append tables keep duplicates for the check
        to report instead."""
        if not spec.key or spec.mode == "append":
            return
        cols = ", ".join(map(quote, spec.key))
        self.conn.execute(
            f"CREATE UNIQUE INDEX IF NOT EXISTS {quote('_croft_key_' + table)} ON {quote(table)} ({cols})"
        )

    def _apply(
        self, table: str, table_columns: list[str], staged_columns: list[str], spec: _WriteSpec, stamp: str
    ) -> tuple[int, int, int]:
        """Move staged rows into the table by the write mode; returns (added, updated, deleted)."""
        conn = self.conn
        qt = quote(table)
        staged = {c.lower(): c for c in staged_columns}
        cols = ", ".join([*map(quote, table_columns), '"_loaded_at"', '"_row_hash"'])
        picks = ", ".join(
            [
                *(quote(staged[c.lower()]) if c.lower() in staged else "NULL" for c in table_columns),
                "?",
                '"_row_hash"',
            ]
        )
        if spec.mode == "append":
            cur = conn.execute(
                f"INSERT INTO {qt} ({cols}) SELECT {picks} FROM {STAGE} ORDER BY {SEQ}", (stamp,)
            )
            return cur.rowcount, 0, 0
        if not spec.key:
            return self._apply_by_content(qt, cols, picks, stamp)
        match = " AND ".join(f"_croft_s.{quote(k)} = {qt}.{quote(k)}" for k in spec.key)
        deleted = 0
        if spec.mode == "replace":
            # Look staged keys up in the table's key index (the staged columns have no type affinity, so
            # an index on them could not serve the comparison); whatever was not found goes.
            cur = conn.execute(
                f"DELETE FROM {qt} WHERE rowid NOT IN "
                f"(SELECT {qt}.rowid FROM {STAGE} AS _croft_s JOIN {qt} ON {match})"
            )
            deleted = cur.rowcount
        (updated,) = conn.execute(
            f"SELECT COUNT(*) FROM {STAGE} AS _croft_s JOIN {qt} ON {match} "
            f'WHERE _croft_s."_row_hash" IS NOT {qt}."_row_hash"'
        ).fetchone()
        (added,) = conn.execute(
            f"SELECT COUNT(*) FROM {STAGE} AS _croft_s WHERE NOT EXISTS (SELECT 1 FROM {qt} WHERE {match})"
        ).fetchone()
        sets = ", ".join(
            f"{quote(c)} = excluded.{quote(c)}" for c in [*table_columns, "_loaded_at", "_row_hash"]
        )
        conn.execute(
            f"INSERT INTO {qt} ({cols}) SELECT {picks} FROM {STAGE} WHERE true ORDER BY {SEQ} "
            f"ON CONFLICT ({', '.join(map(quote, spec.key))}) DO UPDATE SET {sets} "
            f'WHERE excluded."_row_hash" IS NOT {qt}."_row_hash"',
            (stamp,),
        )
        return added, updated, deleted

    def _apply_by_content(self, qt: str, cols: str, picks: str, stamp: str) -> tuple[int, int, int]:
        """Replace without a key: rows are a multiset of contents. Surplus copies go, missing copies come,
        and identical rows stay untouched (keeping their stamps)."""
        conn = self.conn
        deleted = conn.execute(
            f"""DELETE FROM {qt} WHERE rowid IN (
                SELECT _croft_old.rid FROM (
                    SELECT rowid AS rid, "_row_hash",
                           ROW_NUMBER() OVER (PARTITION BY "_row_hash" ORDER BY rowid) AS n FROM {qt}
                ) AS _croft_old
                LEFT JOIN (SELECT "_row_hash", COUNT(*) AS c FROM {STAGE} GROUP BY "_row_hash") AS _croft_new
                  ON _croft_new."_row_hash" = _croft_old."_row_hash"
                WHERE _croft_old.n > COALESCE(_croft_new.c, 0))"""
        ).rowcount
        added = conn.execute(
            f"""INSERT INTO {qt} ({cols})
                SELECT {picks} FROM (
                    SELECT *, ROW_NUMBER() OVER (PARTITION BY "_row_hash" ORDER BY {SEQ}) AS "_croft_n"
                    FROM {STAGE}
                ) AS _croft_s
                LEFT JOIN (
                    SELECT "_row_hash" AS _croft_h, COUNT(*) AS _croft_c FROM {qt} GROUP BY "_row_hash"
                ) AS _croft_kept ON _croft_kept._croft_h = _croft_s."_row_hash"
                WHERE _croft_s."_croft_n" > COALESCE(_croft_kept._croft_c, 0)
                ORDER BY {SEQ}""",
            (stamp,),
        ).rowcount
        return added, 0, deleted

    def _save_state(
        self,
        spec: _WriteSpec,
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

    def _save_inputs(self, spec: _WriteSpec) -> None:
        inputs = spec.inputs or ()
        seen = dict(inputs) if isinstance(inputs, Mapping) else {name: self.version(name) for name in inputs}
        self.conn.execute("DELETE FROM _croft_inputs WHERE asset = ?", (spec.asset,))
        self.conn.executemany(
            "INSERT INTO _croft_inputs (asset, input, seen_version) VALUES (?, ?, ?)",
            [(spec.asset, name, version) for name, version in sorted(seen.items())],
        )

    # ------------------------------------------------------------------ the sqlite3 boundary

    @contextmanager
    def _translate(self, asset: str | None, what: str, *, user_sql: bool = False) -> Iterator[None]:
        """Turn sqlite3's exceptions into CroftErrors, by result code and class (never by message text)."""
        try:
            yield
        except sqlite3.Error as exc:
            waited = self.busy_timeout_ms
            raise _problem_for(exc, asset, what, self.path, user_sql=user_sql, waited_ms=waited) from exc


def _problem_for(
    exc: sqlite3.Error,
    asset: str | None,
    what: str,
    path: Path,
    *,
    user_sql: bool = False,
    waited_ms: int = BUSY_TIMEOUT_MS,
) -> CroftError:
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    where = {"asset": asset} if asset else {}
    details = {"sqlite": str(exc), "file": str(path)}
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return CroftError(
            "DB_BUSY",
            f"{what}: {path.name} stayed locked by another writer for more than {waited_ms / 1000:g} s.",
            "Another croft run (or a program with the warehouse open) is writing; try again in a moment.",
            retryable=True,
            details=details,
            **where,
        )
    if code == sqlite3.SQLITE_AUTH:
        return CroftError(
            "SQL_NOT_SELECT",
            f"{what}: the SQL tries to do more than read ({exc}).",
            "SQL assets and checks may only read: one SELECT (CTEs allowed), no INSERT, UPDATE, DELETE, "
            "CREATE, ATTACH or PRAGMA.",
            details=details,
            **where,
        )
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return CroftError(
            "INTERNAL_ERROR",
            f"{what}: {path} is not a readable SQLite database ({exc}).",
            "Restore the warehouse from a backup, or move it aside and run every asset again.",
            details=details,
            **where,
        )
    if user_sql and isinstance(exc, sqlite3.ProgrammingError):
        return CroftError(
            "SQL_NOT_ONE_STATEMENT",
            f"{what}: the SQL holds more than one statement.",
            "A SQL asset is exactly one SELECT; split other statements into their own assets.",
            details=details,
            **where,
        )
    if user_sql:
        return CroftError(
            "SQL_ERROR",
            f"{what}: {exc}",
            "Fix the SQL; `croft validate` checks it against the current tables.",
            details=details,
            **where,
        )
    return CroftError(
        "INTERNAL_ERROR",
        f"{what}: the warehouse failed with {type(exc).__name__}: {exc}",
        "Check that the warehouse file is writable and the disk is not full; if it keeps happening, "
        "report it.",
        details={**details, "class": type(exc).__name__},
        **where,
    )


# ---------------------------------------------------------------------------------------------- helpers


def resolve_mode(mode: str | None, key: Sequence[str], cursor_field: str | None, asset: str) -> Mode:
    """The write mode (croft-engine §2.2): no key -> replace; key -> replace by key; key + incremental ->
    merge; append only when asked."""
    if mode is None:
        if cursor_field and not key:
            raise CroftError(
                "ASSET_INVALID",
                f"{asset} is incremental without a key, so re-read rows would be duplicated.",
                'Add key="id" so re-read rows merge, or say write="append" to keep every row.',
                asset=asset,
            )
        return "merge" if key and cursor_field else "replace"
    if mode not in ("replace", "merge", "append"):
        raise CroftError(
            "ASSET_INVALID",
            f"{asset} has write={mode!r}.",
            'write is "replace", "merge" or "append".',
            asset=asset,
        )
    if mode == "merge" and not key:
        raise CroftError("ASSET_INVALID", f"{asset} merges without a key.", 'Add key="id".', asset=asset)
    if mode == "replace" and cursor_field:
        raise CroftError(
            "ASSET_INVALID",
            f'{asset} says write="replace" but is incremental.',
            'Drop write= (croft merges when there is a key) or use write="append".',
            asset=asset,
        )
    return mode  # type: ignore[return-value]


def _dedupe(spec: _WriteSpec) -> Literal["cursor", "unique", "none"]:
    """A key repeated within one load: merge keeps one row, replace refuses, append keeps them all."""
    if not spec.key or spec.mode == "append":
        return "none"
    return "cursor" if spec.mode == "merge" else "unique"


def _key_tuple(key: str | Sequence[str] | None) -> tuple[str, ...]:
    if not key:
        return ()
    keys = (key,) if isinstance(key, str) else tuple(key)
    bad = [k for k in keys if not is_identifier(k)]
    if bad:
        raise CroftError(
            "ASSET_INVALID",
            f"The key {', '.join(map(repr, bad))} is not a column name croft can use.",
            "A key names columns: letters, digits and underscores.",
            details={"key": list(keys)},
        )
    return keys


def _require_table_name(asset: str) -> None:
    if not is_identifier(asset) or asset.lower().startswith(("_croft", "sqlite_")):
        raise CroftError(
            "NAME_INVALID",
            f"{asset!r} cannot be a table name in the warehouse.",
            "Asset names are letters, digits and underscores, not starting with _croft or sqlite_.",
            details={"name": asset},
        )


def _require_select(asset: str, sql: str) -> None:
    """A friendly SQL_NOT_SELECT before running anything; the read-only authorizer is the real guard."""
    match = STATEMENT_START.match(sql or "")
    first = match.group(1).upper() if match else ""
    if first not in ("SELECT", "WITH", "VALUES"):
        raise CroftError(
            "SQL_NOT_SELECT",
            f"{asset}.sql starts with {first or 'nothing'}; a SQL asset is one SELECT.",
            "Write one SELECT (CTEs allowed) over other assets' tables; croft builds the table from it.",
            asset=asset,
        )


def _flatten(rows: Iterable[Any]) -> Iterator[Any]:
    """Rows are dicts; a list (or tuple) is a batch of rows."""
    for item in rows:
        if isinstance(item, list | tuple):
            yield from item
        else:
            yield item


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _saved_cursor(saved: dict[str, Any] | None) -> Cursor | None:
    if not saved or saved.get("cursor_value") is None or not saved.get("cursor_type"):
        return None
    return Cursor(saved["cursor_value"], saved["cursor_type"], saved.get("cursor_unit"))


def _replace_inputs(spec: _WriteSpec, inputs: Sequence[str]) -> _WriteSpec:
    from dataclasses import replace

    return replace(spec, inputs=list(inputs))


def _replace_committed(result: WriteResult) -> WriteResult:
    from dataclasses import replace

    return replace(result, committed=False)
