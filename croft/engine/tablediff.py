"""How staged rows become a data table: create it, keep its key index, and apply the diff by write mode."""

from __future__ import annotations

import sqlite3

from croft.engine.checks import quote
from croft.engine.staging import SEQ, STAGE, Stage
from croft.engine.writespec import WriteSpec

__all__ = ["apply_staged", "create_table", "ensure_key_index"]


def create_table(conn: sqlite3.Connection, table: str, stage: Stage, spec: WriteSpec) -> None:
    """A new data table with the staged columns, the stamp index and the key index."""
    defs = [f"{quote(c)} {stage.types[c]}".rstrip() for c in stage.columns]
    defs += ['"_loaded_at" TEXT NOT NULL', '"_row_hash" TEXT NOT NULL']
    conn.execute(f"CREATE TABLE {quote(table)} ({', '.join(defs)})")
    conn.execute(f'CREATE INDEX {quote("_croft_stamp_" + table)} ON {quote(table)} ("_loaded_at")')
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


def apply_staged(
    conn: sqlite3.Connection,
    table: str,
    table_columns: list[str],
    staged_columns: list[str],
    spec: WriteSpec,
    stamp: str,
) -> tuple[int, int, int]:
    """Move staged rows into the table by the write mode; returns (added, updated, deleted)."""
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
        cur = conn.execute(f"INSERT INTO {qt} ({cols}) SELECT {picks} FROM {STAGE} ORDER BY {SEQ}", (stamp,))
        return cur.rowcount, 0, 0
    if not spec.key:
        return _apply_by_content(conn, qt, cols, picks, stamp)
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
    sets = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in [*table_columns, "_loaded_at", "_row_hash"])
    conn.execute(
        f"INSERT INTO {qt} ({cols}) SELECT {picks} FROM {STAGE} WHERE true ORDER BY {SEQ} "
        f"ON CONFLICT ({', '.join(map(quote, spec.key))}) DO UPDATE SET {sets} "
        f'WHERE excluded."_row_hash" IS NOT {qt}."_row_hash"',
        (stamp,),
    )
    return added, updated, deleted


def _apply_by_content(
    conn: sqlite3.Connection, qt: str, cols: str, picks: str, stamp: str
) -> tuple[int, int, int]:
    """Replace without a key: rows are a multiset of contents. Surplus copies go, missing copies come,
    and identical rows stay untouched (keeping their stamps)."""
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
