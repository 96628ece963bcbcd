"""This write's rows staged in a TEMP table, checked and de-duplicated, before the diff moves them."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from croft.core.problems import CroftError
from croft.engine.checks import is_identifier, quote
from croft.engine.cursor import CursorTracker
from croft.engine.rows import RESERVED_COLUMNS, convert, row_hash, sql_type

__all__ = ["FLUSH_EVERY", "SEQ", "STAGE", "Dedupe", "Stage", "StagePlan", "dedupe_for"]

ROWID_NAMES = frozenset({"rowid", "oid", "_rowid_"})  # a column with one of these names hides the rowid
STAGE = 'temp."_croft_stage"'
SEQ = '"_croft_seq"'
FLUSH_EVERY = 500
Dedupe = Literal["cursor", "unique", "none"]


def dedupe_for(mode: str, key: Sequence[str]) -> Dedupe:
    """A key repeated within one load: merge keeps one row, replace refuses, append keeps them all."""
    if not key or mode == "append":
        return "none"
    return "cursor" if mode == "merge" else "unique"


def _row_invalid(asset: str, message: str, hint: str, **details: Any) -> CroftError:
    """A ROW_INVALID naming the asset, with the row and column in details."""
    return CroftError("ROW_INVALID", message, hint, asset=asset, details=details or None)


# ---------------------------------------------------------------------------------------------- staging


@dataclass
class StagePlan:
    """How a stage treats one write's rows: the key, what a repeated key means, the cursor to feed."""

    asset: str
    key: tuple[str, ...]
    dedupe: Dedupe
    cursor: CursorTracker | None
    drop_reserved: bool  # transforms drop _loaded_at/_row_hash copied from inputs; ingests may not send them


@dataclass
class Stage:
    """This write's rows in a TEMP table (created inside the write transaction), columns grown on demand.

    Column names are matched case-insensitively (as SQLite does) and kept in first-seen spelling.
    """

    conn: sqlite3.Connection
    plan: StagePlan
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
                value = convert(raw)
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
