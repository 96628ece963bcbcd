"""This write's rows staged in a TEMP table, checked and de-duplicated in SQLite, before the diff moves them.

Rows stream in as batches and go to the TEMP table as they come, so memory does not grow with the row
count. A repeated key is settled by the stage itself (an upsert on a unique index over the key): merge keeps
the highest cursor, then the last yielded; replace counts the repeats (reported as a failed unique check);
append keeps everything. Per row, Python only maps names to columns (once per distinct row shape),
converts the values SQLite cannot take as they are, and notes the cursor; a batch that needs none of
that (plain values, one shape, cursors of the common form) is checked in C and staged with no Python
per row at all (``Stage._add_fast``).
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from itertools import chain, islice
from operator import is_not, itemgetter, lt
from typing import Any, Literal

from croft.core.problems import CroftError
from croft.engine.checks import is_identifier, quote
from croft.engine.cursor import CursorTracker
from croft.engine.reserved import RESERVED_COLUMNS
from croft.engine.rows import INT_RANGE, convert, sql_type

__all__ = ["FLUSH_EVERY", "SEQ", "STAGE", "Dedupe", "Stage", "StagePlan", "dedupe_for", "statement_body"]

ROWID_NAMES = frozenset({"rowid", "oid", "_rowid_"})  # a column with one of these names hides the rowid
STAGE = 'temp."_croft_stage"'
STAGE_NAME = '"_croft_stage"'
_STAGE_KEY = 'temp."_croft_stage_key"'
_INDEX_STAGE_KEYS = True  # a keyed replace's SELECT is staged under a unique index (see from_select)
SEQ = '"_croft_seq"'
RANK_KIND = '"_croft_rank_kind"'
RANK = '"_croft_rank"'
FLUSH_EVERY = 2000
Dedupe = Literal["cursor", "unique", "none"]
_RANK_CACHE = 4096
_fromisoformat = datetime.fromisoformat
_INSTANT = "instant"  # the rank kind of a cursor in the common UTC form, until a key repeats
_PLAIN = frozenset({str, int, float, type(None), bytes})  # stored as they are (ints are range-checked late)
_BOUND_AS_IS = _PLAIN | {bool}  # what sqlite3 binds exactly as convert() would (a bool as its int)
_FAST_MIN = 16  # a batch this long is worth checking for the fast path (see _add_fast)
# The common cursor form, checked for a whole batch at once: its text with every digit made 0.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_INSTANT_FORM = b"0000-00-00T00:00:00Z"
_not_none = partial(is_not, None)


def dedupe_for(mode: str, key: Sequence[str]) -> Dedupe:
    """A key repeated within one load: merge keeps one row, replace refuses, append keeps them all."""
    if not key or mode == "append":
        return "none"
    return "cursor" if mode == "merge" else "unique"


def statement_body(sql: str) -> str:
    """One statement without its closing semicolon (and whatever follows it), so it can be a subquery.

    Quotes, bracketed names and comments are skipped, so a ``;`` inside them does not count.
    """
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`[":
            close = "]" if ch == "[" else ch
            end = sql.find(close, i + 1)
            while end != -1 and close != "]" and sql.startswith(close * 2, end):
                end = sql.find(close, end + 2)
            i = n if end == -1 else end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end == -1 else end + 2
        elif ch == ";":
            return sql[:i]
        else:
            i += 1
    return sql


def _row_invalid(asset: str, message: str, hint: str, **details: Any) -> CroftError:
    """A ROW_INVALID naming the asset, with the row and column in details."""
    return CroftError("ROW_INVALID", message, hint, asset=asset, details=details or None)


@dataclass
class StagePlan:
    """How a stage treats one write's rows: the key, what a repeated key means, the cursor to feed."""

    asset: str
    key: tuple[str, ...]
    dedupe: Dedupe
    cursor: CursorTracker | None
    drop_reserved: bool  # transforms drop _loaded_at/_row_hash copied from inputs; ingests may not send them


@dataclass
class _Shape:
    """What one distinct row shape (its keys, in order) means: the columns, and where key and cursor sit."""

    names: tuple[str, ...]  # canonical column of each kept value
    keep: tuple[int, ...] | None  # positions to keep when some keys are dropped; None keeps all
    key_at: tuple[int, ...]
    cursor_at: int | None
    untyped: list[int]  # positions whose column has no type yet
    rows: list[list[Any]] = field(default_factory=list)


@dataclass
class Stage:
    """This write's rows in a TEMP table, columns grown on demand.

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
    _shapes: dict[tuple[Any, ...], _Shape] = field(default_factory=dict)
    _buffered: int = 0
    _sql: dict[tuple[str, ...], str] = field(default_factory=dict)
    _ranks: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # cursor text -> its rank, recent ones
    _latest_instant: str | None = None  # the greatest cursor value of the common UTC form (see add_many)
    deferred: str | None = None  # a SELECT whose rows go straight into a new table (see defer_select)
    _last_key: int | None = None  # the last single integer key, while keys keep rising (see add_many)
    _keys_rising: bool = True
    _keys_indexed: bool = False  # the stage's own UNIQUE index held every key as it went in (see from_select)

    def open(self, known_columns: Sequence[str], known_types: Mapping[str, str] | None = None) -> None:
        """The TEMP table, with the target table's columns and types (so comparisons use its affinity)."""
        self.conn.execute(f"DROP TABLE IF EXISTS {STAGE}")
        extra = ""
        if self.plan.dedupe == "cursor":
            extra = f", {RANK_KIND}, {RANK}"
        self.conn.execute(f"CREATE TEMP TABLE {STAGE_NAME} ({SEQ} INTEGER PRIMARY KEY{extra})")
        for name in known_columns:
            self._by_lower.setdefault(name.lower(), name)
            self._add_column(name, (known_types or {}).get(name, ""))
        self.declare(self.plan.key)  # so keyed SQL works even when the load has no row

    def declare(self, names: Sequence[str]) -> None:
        """Columns a SQL transform's SELECT returns, known even when it returns no row."""
        for name in names:
            self._column(name, 0)

    def _add_column(self, name: str, declared: str) -> None:
        self.conn.execute(f"ALTER TABLE {STAGE} ADD COLUMN {quote(name)} {declared}".rstrip())
        self.columns.append(name)
        self.types[name] = declared
        self._sql.clear()  # the upsert statements name every column

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
            self._add_column(canonical, "")
        return canonical

    # -------------------------------------------------------------------------------- rows from Python

    def feed(self, rows: Iterable[Any]) -> None:
        """Stage rows: dicts, or lists (tuples) of dicts as batches. A source that can pump (an
        extraction's Stream) stages its batches from its own thread, so its rows never cross threads."""
        pump = getattr(rows, "pump", None)
        if pump is not None:
            pump(self.add_many)
            return
        single: list[Any] = []
        for item in rows:
            if isinstance(item, list | tuple):
                if single:
                    self.add_many(single)
                    single = []
                self.add_many(item)
            else:
                single.append(item)
                if len(single) >= FLUSH_EVERY:
                    self.add_many(single)
                    single = []
        if single:
            self.add_many(single)

    def _shape(self, row: Mapping[Any, Any], signature: tuple[Any, ...], index: int) -> _Shape:
        asset = self.plan.asset
        names: list[str] = []
        keep: list[int] = []
        for position, name in enumerate(signature):
            column = self._column(name, index)
            if column is None:
                continue
            if column in names:
                raise _row_invalid(
                    asset,
                    f"Row {index} of {asset} has column {column!r} twice (names differ only in case).",
                    "SQLite column names ignore case; keep one of them.",
                    row=index,
                    column=column,
                )
            names.append(column)
            keep.append(position)
        lowered = [n.lower() for n in names]
        key_at = []
        for key in self.plan.key:
            if key.lower() not in lowered:
                raise self._no_key(key, index)
            key_at.append(lowered.index(key.lower()))
        cursor_at = None
        if self.plan.cursor is not None and self.plan.cursor.field.lower() in lowered:
            cursor_at = lowered.index(self.plan.cursor.field.lower())
            self.cursor_field_seen = True
        shape = _Shape(
            names=tuple(names),
            keep=None if len(keep) == len(signature) else tuple(keep),
            key_at=tuple(key_at),
            cursor_at=cursor_at,
            untyped=[i for i, n in enumerate(names) if not self.types[n]],
        )
        self._shapes[signature] = shape
        return shape

    def _no_key(self, name: str, index: int) -> CroftError:
        return _row_invalid(
            self.plan.asset,
            f"Row {index} of {self.plan.asset} has no value for key column {name!r}.",
            f"Every row needs {name!r}; drop rows without it in the asset code, or pick another key.",
            row=index,
            column=name,
        )

    def add_many(self, rows: Iterable[Any]) -> None:
        """The hot loop: one tuple per row, grouped by shape, flushed in batches."""
        if type(rows) is list and len(rows) >= _FAST_MIN and self._add_fast(rows):
            return
        shapes = self._shapes
        tracker = self.plan.cursor
        merge = self.plan.dedupe == "cursor"
        no_rank = (None, None)
        ranks = self._ranks
        plain = _PLAIN
        convert_ = self._convert
        parse = _fromisoformat
        latest = self._latest_instant or ""
        # A single integer key that only ever rises cannot repeat: then finish skips looking for repeats.
        rising = self._keys_rising and len(self.plan.key) == 1
        last_key = self._last_key
        index = self.rows_in
        buffered = self._buffered
        try:
            for row in rows:
                if type(row) is not dict:
                    row = self._as_dict(row, index)
                signature = tuple(row)
                shape = shapes.get(signature) or self._shape(row, signature, index)
                if shape.keep is None:
                    values = [v if type(v) in plain else convert_(v, shape, row, index) for v in row.values()]
                else:
                    raw = list(row.values())
                    values = [raw[i] for i in shape.keep]
                    values = [v if type(v) in plain else convert_(v, shape, row, index) for v in values]
                if None in values:
                    for at in shape.key_at:
                        if values[at] is None:
                            raise self._no_key(shape.names[at], index)
                if rising:
                    key = values[shape.key_at[0]]
                    if type(key) is int and (last_key is None or key > last_key):
                        last_key = key
                    else:
                        rising = False
                if shape.untyped:
                    self._type(shape, values)
                if tracker is not None and shape.cursor_at is not None:
                    value = values[shape.cursor_at]
                    rank: tuple[Any, Any] | None = None
                    # The common form, a UTC instant to the second (2026-01-01T09:30:00Z): its text order
                    # is time order, so it is only checked here; the tracker is told the greatest one (at
                    # finish), and it is ranked as text, turned into a time only if a key repeats.
                    if (
                        type(value) is str
                        and len(value) == 20
                        and value[19] == "Z"
                        and value[10] == "T"
                        and value[4] == "-"
                        and value[7] == "-"
                        and value[13] == ":"
                        and value[16] == ":"
                    ):
                        try:
                            parse(value)
                        except ValueError:
                            pass
                        else:
                            if value > latest:
                                latest = value
                            rank = (_INSTANT, value)
                    if rank is None:
                        rank = (type(value) is str and ranks.get(value)) or self._rank(tracker, value)
                    if merge:
                        values += rank
                elif merge:
                    values += no_rank
                values.append(index + 1)  # the stage's sequence number goes last (see _insert_sql)
                shape.rows.append(values)
                index += 1
                buffered += 1
                if buffered >= FLUSH_EVERY:
                    self.rows_in = index
                    self.flush()
                    buffered = 0
        finally:
            self.rows_in = index
            self._buffered = buffered
            self._latest_instant = latest or None
            self._last_key, self._keys_rising = last_key, rising

    def _add_fast(self, rows: list[Any]) -> bool:
        """Stage a batch in one executemany, with no Python per row, when the loop in add_many would
        stage it exactly so: dicts of one known shape, values sqlite3 binds as convert() would, every key
        present, cursors (if any) in the common UTC form. Checks run in C over the whole batch; nothing
        changes until all pass. False leaves the batch to the loop."""
        if set(map(type, rows)) != {dict}:
            return False
        signature = tuple(rows[0])
        if len(signature) < 2 or set(map(len, rows)) != {len(signature)}:
            return False
        shape = self._shapes.get(signature) or self._shape(rows[0], signature, self.rows_in)
        if shape.keep is not None:
            return False
        try:  # by name: every row has exactly these keys (same count, none missing), in any order
            params = list(map(itemgetter(*signature), rows))
        except KeyError:
            return False
        if not _BOUND_AS_IS.issuperset(map(type, chain.from_iterable(params))):
            return False
        if any(None in map(itemgetter(at), params) for at in shape.key_at):
            return False
        tracker, merge = self.plan.cursor, self.plan.dedupe == "cursor"
        latest = self._latest_instant or ""
        ranks = ["NULL", "NULL"] if merge else []
        if tracker is not None and shape.cursor_at is not None:
            cursors = list(map(itemgetter(shape.cursor_at), params))
            if set(map(type, cursors)) != {str} or set(map(len, cursors)) != {len(_INSTANT_FORM)}:
                return False
            try:
                text = "".join(cursors).encode("ascii")
                if text.translate(_DIGITS_AS_ZERO) != _INSTANT_FORM * len(cursors):
                    return False
                deque(map(_fromisoformat, cursors), maxlen=0)  # a real date and time, as the loop checks
            except (UnicodeEncodeError, ValueError):
                return False
            latest = max(latest, max(cursors))
            if merge:
                ranks = [f"'{_INSTANT}'", f"?{shape.cursor_at + 1}"]
        rising, last_key = self._keys_rising and len(self.plan.key) == 1, self._last_key
        if rising:
            keys = list(map(itemgetter(shape.key_at[0]), params))
            if (
                set(map(type, keys)) == {int}
                and (last_key is None or keys[0] > last_key)
                and all(map(lt, keys, islice(keys, 1, None)))
            ):
                last_key = keys[-1]
            else:
                rising = False
        for at in shape.untyped:  # a column's type is its first non-NULL value's, as in _type
            first = next(filter(_not_none, map(itemgetter(at), params)), None)
            if first is not None and not self.types[shape.names[at]]:
                self.types[shape.names[at]] = sql_type(convert(first))
        shape.untyped = [at for at in shape.untyped if not self.types[shape.names[at]]]
        self.flush()  # rows the loop buffered go first: the stage keeps arrival order
        cols = [*map(quote, shape.names)] + ([RANK_KIND, RANK] if merge else [])
        marks = [f"?{i}" for i in range(1, len(shape.names) + 1)] + ranks
        # The sequence number is left to SQLite: a rowid one past the greatest, i.e. this row's index + 1.
        sql = f"INSERT INTO {STAGE} ({', '.join(cols)}) VALUES ({', '.join(marks)})"
        try:
            self.conn.executemany(sql, params)
        except OverflowError:
            numbered = [[*p, self.rows_in + i + 1] for i, p in enumerate(params)]
            raise self._huge_int(replace(shape, rows=numbered)) from None
        self.rows_in += len(params)
        self._latest_instant = latest or None
        self._last_key, self._keys_rising = last_key, rising
        return True

    def _as_dict(self, row: Any, index: int) -> dict[Any, Any]:
        if not isinstance(row, Mapping):
            raise _row_invalid(
                self.plan.asset,
                f"Row {index} of {self.plan.asset} is a {type(row).__name__}, not a dict.",
                "Yield dicts (one row each) or lists of dicts (a batch).",
                row=index,
            )
        return dict(row)

    def _rank(self, tracker: CursorTracker, value: Any) -> tuple[Any, Any]:
        """Note a cursor value; returns what ranks its row among rows with the same key (kind, comparable).
        Text values are remembered for a while: parsing a timestamp is the dearest thing done per row."""
        noted = tracker.add(value)
        if noted is None:
            return (None, None)
        kind, comparable = noted
        rank = (kind, comparable.timestamp() if kind == "timestamp" else comparable)
        if type(value) is str:
            if len(self._ranks) >= _RANK_CACHE:
                self._ranks.clear()
            self._ranks[value] = rank
        return rank

    def _convert(self, value: Any, shape: _Shape, row: Mapping[Any, Any], index: int) -> Any:
        try:
            return convert(value)
        except (TypeError, OverflowError) as exc:
            raw = list(row.values())
            if shape.keep is not None:
                raw = [raw[i] for i in shape.keep]
            column = shape.names[next(i for i, v in enumerate(raw) if v is value)]
            raise _row_invalid(
                self.plan.asset,
                f"Row {index} of {self.plan.asset} has {exc} in column {column!r}, which SQLite cannot store.",
                "Convert it in the asset code: numbers, text, booleans, None, dicts and lists are stored "
                "(big integers and decimals as str).",
                row=index,
                column=column,
            ) from None

    def _type(self, shape: _Shape, values: list[Any]) -> None:
        """A column's type is its first non-NULL value's (types never change afterwards)."""
        for at in shape.untyped:
            name = shape.names[at]
            if values[at] is not None and not self.types[name]:
                self.types[name] = sql_type(values[at])
        shape.untyped = [at for at in shape.untyped if not self.types[shape.names[at]]]

    def _insert_sql(self, names: tuple[str, ...]) -> str:
        sql = self._sql.get(names)
        if sql is not None:
            return sql
        cols = list(map(quote, names))
        if self.plan.dedupe == "cursor":
            cols += [RANK_KIND, RANK]
        cols.append(SEQ)
        sql = f"INSERT INTO {STAGE} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        self._sql[names] = sql
        return sql

    def _keys_distinct(self) -> bool:
        """Rows from Python whose single integer key rose row after row hold each key once. (A REAL
        column could make two large integers equal; there the stage is asked.)"""
        if not self._keys_rising or self._last_key is None or len(self.plan.key) != 1:
            return False
        declared = self.types.get(self._by_lower[self.plan.key[0].lower()], "").upper()
        return not any(part in declared for part in ("REAL", "FLOA", "DOUB"))

    def _settle_repeats(self) -> None:
        """Merge: when a key came more than once, replay the stage in arrival order into a copy with a
        unique key, keeping the higher cursor, then the later row. One sort finds out; most loads stop there."""
        keys = ", ".join(quote(self._by_lower[k.lower()]) for k in self.plan.key)
        repeated = self.conn.execute(
            f"SELECT 1 FROM {STAGE} GROUP BY {keys} HAVING COUNT(*) > 1 LIMIT 1"
        ).fetchone()
        if repeated is None:
            return
        # Instants were ranked as their text (see add_many): as times now, so they compare with the
        # other timestamp forms of the same key.
        self.conn.create_function("_croft_epoch", 1, _epoch, deterministic=True)
        self.conn.execute(
            f"UPDATE {STAGE} SET {RANK_KIND} = 'timestamp', {RANK} = _croft_epoch({RANK}) "
            f"WHERE {RANK_KIND} = '{_INSTANT}'"
        )
        (ddl,) = self.conn.execute(
            "SELECT sql FROM sqlite_temp_master WHERE type = 'table' AND name = '_croft_stage'"
        ).fetchone()
        self.conn.execute(f'ALTER TABLE {STAGE} RENAME TO "_croft_stage_raw"')
        self.conn.execute(ddl.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
        self.conn.execute(f"CREATE UNIQUE INDEX {_STAGE_KEY} ON {STAGE_NAME} ({keys})")
        cols = ", ".join([SEQ, *map(quote, self.columns), RANK_KIND, RANK])
        self.conn.execute(
            f'INSERT INTO {STAGE} ({cols}) SELECT {cols} FROM temp."_croft_stage_raw" WHERE true '
            f"ORDER BY {SEQ}{self._on_conflict()}"
        )
        self.conn.execute('DROP TABLE temp."_croft_stage_raw"')

    def _on_conflict(self) -> str:
        """How the stage settles a repeated key (see the module doc)."""
        target = ", ".join(quote(self._by_lower[k.lower()]) for k in self.plan.key)
        sets = ", ".join(f"{c} = excluded.{c}" for c in [SEQ, *map(quote, self.columns), RANK_KIND, RANK])
        old, new = STAGE_NAME, "excluded"
        later = f"{new}.{SEQ} > {old}.{SEQ}"
        wins = (
            f"CASE WHEN {new}.{RANK} IS NULL THEN {old}.{RANK} IS NULL AND {later} "
            f"WHEN {old}.{RANK} IS NULL THEN 1 "
            f"WHEN {new}.{RANK_KIND} IS NOT {old}.{RANK_KIND} THEN {later} "
            f"ELSE {new}.{RANK} > {old}.{RANK} OR ({new}.{RANK} = {old}.{RANK} AND {later}) END"
        )
        return f" ON CONFLICT ({target}) DO UPDATE SET {sets} WHERE {wins}"

    def flush(self) -> None:
        for shape in self._shapes.values():
            if not shape.rows:
                continue
            try:
                self.conn.executemany(self._insert_sql(shape.names), shape.rows)
            except OverflowError:
                raise self._huge_int(shape) from None
            shape.rows.clear()
        self._buffered = 0

    def _huge_int(self, shape: _Shape) -> CroftError:
        for row in shape.rows:
            for name, value in zip(shape.names, row, strict=False):
                if type(value) is int and not INT_RANGE[0] <= value <= INT_RANGE[1]:
                    return _row_invalid(
                        self.plan.asset,
                        f"Row {row[-1] - 1} of {self.plan.asset} has an integer beyond 64 bits in column "
                        f"{name!r}, which SQLite cannot store.",
                        "Convert it in the asset code: big integers and decimals are stored as str.",
                        row=row[-1] - 1,
                        column=name,
                    )
        raise AssertionError("an OverflowError with no integer beyond 64 bits")

    # -------------------------------------------------------------------------------- rows from SQL

    def from_select(self, sql: str, names: Sequence[str]) -> None:
        """A SELECT's rows straight into the stage: no row passes through Python."""
        kept = [n for n in names if n.lower() not in RESERVED_COLUMNS]
        self.declare(kept)
        cols = [quote(self._by_lower[n.lower()]) for n in kept]
        picks = ", ".join(f"_croft_q.{quote(n)}" for n in kept) or "NULL"
        target = f"({', '.join(cols)})" if cols else ""
        statement = f"INSERT INTO {STAGE} {target} SELECT {picks} FROM (\n{sql}\n) AS _croft_q WHERE true"
        if not cols:
            statement = f"INSERT INTO {STAGE} ({SEQ}) SELECT NULL FROM (\n{sql}\n) AS _croft_q WHERE true"
        # A keyed replace: a UNIQUE index on the stage's key finds a repeat as the rows go in, cheaper
        # than sorting them afterwards. A repeat fails the INSERT (undone by SQLite), which then runs
        # again without the index, so duplicate_failure names the repeats as before.
        indexed = _INDEX_STAGE_KEYS and self.plan.dedupe == "unique" and bool(cols) and bool(self.plan.key)
        if indexed:
            keys = ", ".join(quote(self._by_lower[k.lower()]) for k in self.plan.key)
            self.conn.execute(f"CREATE UNIQUE INDEX {_STAGE_KEY} ON {STAGE_NAME} ({keys})")
        try:
            cursor = self.conn.execute(statement)
        except sqlite3.IntegrityError:
            if not indexed:
                raise
            self.conn.execute(f"DROP INDEX {_STAGE_KEY}")
            indexed = False
            cursor = self.conn.execute(statement)
        self._keys_indexed = indexed
        self.rows_in = max(cursor.rowcount, 0)
        for name in self.columns:
            if not self.types[name]:
                first = self.conn.execute(
                    f"SELECT typeof({quote(name)}) FROM {STAGE} WHERE {quote(name)} IS NOT NULL "
                    f"ORDER BY {SEQ} LIMIT 1"
                ).fetchone()
                self.types[name] = _SQL_TYPES.get(first[0], "") if first else ""

    def defer_select(self, sql: str, names: Sequence[str]) -> bool:
        """A new table can take a SELECT's rows straight from it, written once instead of staged and
        copied: here only its columns are declared, typed as SQLite types them in CREATE TABLE AS (a
        column keeps its source's type). False when the SELECT does not return exactly the stage's
        columns (the key among them), so the rows are staged as usual."""
        kept = [n for n in names if n.lower() not in RESERVED_COLUMNS]
        if not kept or {n.lower() for n in kept} != {c.lower() for c in self.columns} | {
            n.lower() for n in kept
        }:
            return False
        self.declare(kept)
        picks = ", ".join(f"_croft_q.{quote(n)}" for n in kept)
        probe = 'temp."_croft_shape"'
        self.conn.execute(f"DROP TABLE IF EXISTS {probe}")
        self.conn.execute(f"CREATE TABLE {probe} AS SELECT {picks} FROM (\n{sql}\n) AS _croft_q LIMIT 0")
        for row in self.conn.execute('PRAGMA temp.table_info("_croft_shape")').fetchall():
            self.types[self._by_lower[row[1].lower()]] = row[2]
        self.conn.execute(f"DROP TABLE {probe}")
        self.deferred = sql
        return True

    # -------------------------------------------------------------------------------- the end

    def finish(self) -> int:
        """Flush; returns the number of staged rows (repeated keys settled)."""
        self.flush()
        if self.plan.dedupe == "cursor" and not self._keys_distinct():
            self._settle_repeats()
        if self._latest_instant is not None and self.plan.cursor is not None:
            self.plan.cursor.add(self._latest_instant)
        (count,) = self.conn.execute(f"SELECT COUNT(*) FROM {STAGE}").fetchone()
        return int(count)

    def duplicate_failure(self, source: str = STAGE, order: str = SEQ) -> CroftError | None:
        """CHECK_FAILED when a replace brought a key more than once (one sort of the staged keys; of the
        new table's, when its rows went there straight from a SELECT)."""
        if self.plan.dedupe != "unique":
            return None
        cols = ", ".join(quote(self._by_lower[k.lower()]) for k in self.plan.key)
        if source == STAGE and self._keys_indexed:
            # The index held every key once; only keys with a NULL part, which a UNIQUE index lets
            # repeat but the sort groups together, are left to look for.
            nulls = " OR ".join(f"{quote(self._by_lower[k.lower()])} IS NULL" for k in self.plan.key)
            (repeats,) = self.conn.execute(f"SELECT COUNT(*) > 1 FROM {STAGE} WHERE {nulls}").fetchone()
            if not repeats:
                return None
        query = (
            f"SELECT {cols}, COUNT(*) FROM {source} GROUP BY {cols} HAVING COUNT(*) > 1 ORDER BY MIN({order})"
        )
        found = self.conn.execute(query).fetchall()
        if not found:
            return None
        listed = ", ".join(self.plan.key)
        check = f"unique({listed})"
        sample = [{**dict(zip(self.plan.key, row[:-1], strict=True)), "count": row[-1]} for row in found[:5]]
        return CroftError(
            "CHECK_FAILED",
            f"Check {check} on {self.plan.asset} failed: {len(found)} key value(s) appear "
            "more than once in this load; nothing was written.",
            f"A replace with key={list(self.plan.key)!r} needs each key once. Fix the source or the key; for "
            "an incremental source that re-sends rows, add incremental= so croft merges them.",
            asset=self.plan.asset,
            details={"check": check, "failing": sum(row[-1] for row in found), "sample": sample},
        )

    def drop(self) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {STAGE}")


_SQL_TYPES = {"integer": "INTEGER", "real": "REAL", "text": "TEXT", "blob": "BLOB"}


def _epoch(value: str) -> float:
    """A staged instant's rank as a time: what the general path ranks a timestamp by."""
    return _fromisoformat(value).timestamp()
