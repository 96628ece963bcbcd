"""How staged rows become a data table: create it, keep its key index, and apply the diff by write mode.

The diff is set-based: rows are compared column by column inside SQLite (``IS NOT``, so NULL equals NULL),
and only added or changed rows are written, carrying the new stamp; unchanged rows keep theirs. When
nothing differs, nothing is written at all.
"""

from __future__ import annotations

import sqlite3

from croft.engine.checks import quote
from croft.engine.staging import SEQ, STAGE, Stage
from croft.engine.writespec import WriteSpec

__all__ = ["apply_staged", "create_table", "ensure_key_index", "fill_from_select", "index_table"]

_OLD = "_croft_old"
_NEW = "_croft_new"


def create_table(conn: sqlite3.Connection, table: str, stage: Stage) -> None:
    """A new data table with the staged columns; ``index_table`` adds its indexes once it is filled
    (building an index from a sort beats growing it row by row).

    ``_row_hash`` stays as a column for older readers but is left NULL: the diff compares columns.
    """
    defs = [f"{quote(c)} {stage.types[c]}".rstrip() for c in stage.columns]
    defs += ['"_loaded_at" TEXT NOT NULL', '"_row_hash" TEXT']
    conn.execute(f"CREATE TABLE {quote(table)} ({', '.join(defs)})")


def index_table(conn: sqlite3.Connection, table: str, spec: WriteSpec) -> None:
    """The key index, and for an ingest the stamp index, built once the new table is filled. Raises
    sqlite3.IntegrityError when the rows repeat a key.

    ``_loaded_at`` is read by a write's checks (the rows it stamped) and the next stamp's MAX. An ingest
    usually touches a small part of a big table, so there the index saves a scan per write; a transform
    writes its whole output each time and its diff reads the whole table anyway, so there the index
    would only cost every build a second sorted copy of the table."""
    if spec.kind == "ingest":
        conn.execute(
            f'CREATE INDEX IF NOT EXISTS {quote("_croft_stamp_" + table)} ON {quote(table)} ("_loaded_at")'
        )
    ensure_key_index(conn, table, spec)


def ensure_key_index(conn: sqlite3.Connection, table: str, spec: WriteSpec) -> None:
    """A UNIQUE index on the key (what ON CONFLICT needs); append tables keep duplicates for the check
    to report instead."""
    if not spec.key or spec.mode == "append":
        return
    cols = ", ".join(map(quote, spec.key))
    conn.execute(
        f"CREATE UNIQUE INDEX IF NOT EXISTS {quote('_croft_key_' + table)} ON {quote(table)} ({cols})"
    )


def fill_from_select(conn: sqlite3.Connection, table: str, columns: list[str], sql: str, stamp: str) -> int:
    """A new table filled straight from its SELECT, in the SELECT's order; returns the row count."""
    cols = ", ".join([*map(quote, columns), '"_loaded_at"', '"_row_hash"'])
    picks = ", ".join(f"_croft_q.{quote(c)}" for c in columns)
    cursor = conn.execute(
        f"INSERT INTO {quote(table)} ({cols}) SELECT {picks}, ?, NULL FROM (\n{sql}\n) AS _croft_q WHERE true",
        (stamp,),
    )
    return int(cursor.rowcount)


def _hash_fill(conn: sqlite3.Connection, table: str) -> str:
    """Tables made before the column comparison declared _row_hash NOT NULL; they get '' instead of NULL."""
    for row in conn.execute(f"PRAGMA table_info({quote(table)})"):
        if row[1] == "_row_hash":
            return "''" if row[3] else "NULL"
    return "NULL"


def apply_staged(
    conn: sqlite3.Connection,
    table: str,
    table_columns: list[str],
    staged_columns: list[str],
    spec: WriteSpec,
    stamp: str,
    *,
    fresh: bool = False,
) -> tuple[int, int, int]:
    """Move staged rows into the table by the write mode; returns (added, updated, deleted).

    ``fresh`` is a table this write created: there is nothing to compare with, so rows go straight in."""
    qt = quote(table)
    staged = {c.lower(): c for c in staged_columns}
    # What each table column gets from a staged row (NULL for a column this load does not have).
    picks = [f"_croft_s.{quote(staged[c.lower()])}" if c.lower() in staged else "NULL" for c in table_columns]
    cols = ", ".join([*map(quote, table_columns), '"_loaded_at"', '"_row_hash"'])
    fill = _hash_fill(conn, table)
    values = ", ".join([*picks, "?", fill])
    if spec.mode == "append" or fresh:
        cur = conn.execute(
            f"INSERT INTO {qt} ({cols}) SELECT {values} FROM {STAGE} AS _croft_s ORDER BY _croft_s.{SEQ}",
            (stamp,),
        )
        return cur.rowcount, 0, 0
    if not spec.key:
        return _apply_by_content(conn, qt, table_columns, picks, cols, fill, stamp)
    match = " AND ".join(
        f"_croft_t.{quote(k)} = _croft_s.{quote(staged.get(k.lower(), k))}" for k in spec.key
    )
    differs = " OR ".join(
        f"{p} IS NOT _croft_t.{quote(c)}" for p, c in zip(picks, table_columns, strict=True)
    )
    differs = differs or "0"
    joined = f"FROM {STAGE} AS _croft_s LEFT JOIN {qt} AS _croft_t ON {match}"
    added, updated, staged_count = conn.execute(
        f"SELECT COUNT(*) - COUNT(_croft_t.rowid), COALESCE(SUM(_croft_t.rowid IS NOT NULL AND ({differs})), 0), "
        f"COUNT(*) {joined}"
    ).fetchone()
    deleted = 0
    if spec.mode == "replace":
        (total,) = conn.execute(f"SELECT COUNT(*) FROM {qt}").fetchone()
        if total > staged_count - added:  # rows whose key this load did not bring
            deleted = conn.execute(
                f"DELETE FROM {qt} WHERE rowid NOT IN (SELECT _croft_t.rowid {joined} "
                "WHERE _croft_t.rowid IS NOT NULL)"
            ).rowcount
    if added or updated:
        sets = ", ".join(
            f"{quote(c)} = excluded.{quote(c)}" for c in [*table_columns, "_loaded_at", "_row_hash"]
        )
        conn.execute(
            f"INSERT INTO {qt} ({cols}) SELECT {values} {joined} "
            f"WHERE _croft_t.rowid IS NULL OR ({differs}) ORDER BY _croft_s.{SEQ} "
            f"ON CONFLICT ({', '.join(map(quote, spec.key))}) DO UPDATE SET {sets}",
            (stamp,),
        )
    return int(added), int(updated), deleted


def _apply_by_content(
    conn: sqlite3.Connection,
    qt: str,
    table_columns: list[str],
    picks: list[str],
    cols: str,
    fill: str,
    stamp: str,
) -> tuple[int, int, int]:
    """Replace without a key: rows are a multiset of contents. Surplus copies go, missing copies come,
    and identical rows stay untouched (keeping their stamps). Copies are numbered within equal contents
    on both sides, so (contents, number) pairs match one to one."""
    user = [quote(c) for c in table_columns]
    names = [f'"_croft_c{i}"' for i in range(len(user))]
    over = ", ".join(names) or "1"
    conn.execute(f"DROP TABLE IF EXISTS temp.{_OLD}")
    conn.execute(f"DROP TABLE IF EXISTS temp.{_NEW}")
    conn.execute(
        f"CREATE TEMP TABLE {_OLD} AS SELECT *, ROW_NUMBER() OVER (PARTITION BY {over} ORDER BY rid) AS n "
        f"FROM (SELECT rowid AS rid{''.join(f', {u} AS {n}' for u, n in zip(user, names, strict=True))} "
        f"FROM {qt})"
    )
    conn.execute(
        f"CREATE TEMP TABLE {_NEW} AS SELECT *, ROW_NUMBER() OVER (PARTITION BY {over} ORDER BY seq) AS n "
        f"FROM (SELECT _croft_s.{SEQ} AS seq"
        f"{''.join(f', {p} AS {n}' for p, n in zip(picks, names, strict=True))} FROM {STAGE} AS _croft_s)"
    )
    index_cols = ", ".join(["n", *names])
    conn.execute(f"CREATE INDEX temp._croft_old_i ON {_OLD} ({index_cols})")
    conn.execute(f"CREATE INDEX temp._croft_new_i ON {_NEW} ({index_cols})")

    def same(a: str, b: str) -> str:
        return " AND ".join([f"{a}.n = {b}.n", *(f"{a}.{n} IS {b}.{n}" for n in names)])

    deleted = conn.execute(
        f"DELETE FROM {qt} WHERE rowid IN (SELECT rid FROM {_OLD} AS o "
        f"WHERE NOT EXISTS (SELECT 1 FROM {_NEW} AS s WHERE {same('s', 'o')}))"
    ).rowcount
    inserted = ", ".join([*(f"s.{n}" for n in names), "?", fill])
    added = conn.execute(
        f"INSERT INTO {qt} ({cols}) SELECT {inserted} FROM {_NEW} AS s "
        f"WHERE NOT EXISTS (SELECT 1 FROM {_OLD} AS o WHERE {same('o', 's')}) ORDER BY s.seq",
        (stamp,),
    ).rowcount
    conn.execute(f"DROP TABLE temp.{_OLD}")
    conn.execute(f"DROP TABLE temp.{_NEW}")
    return added, 0, deleted
