"""Blocking checks on a table, and the read-only sandbox every piece of user-written SQL runs in.

A check is one of ``unique(a, b)``, ``not_null(a, b)``, ``min_rows(n)`` or a boolean SQL expression
(NULL passes). ``unique`` and ``min_rows`` look at the whole table after the write; ``not_null`` and
expressions look at the rows this write stamped. Checks run inside the write transaction, so a failure
(``CHECK_FAILED``) rolls the whole write back. Each expression is parsed as one expression and
evaluated under an authorizer that only lets it read, so check text cannot change the warehouse.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from croft.core.problems import CroftError, Problem
from croft.project.checkspec import (
    Check,
    Expression,
    MinRows,
    NotNull,
    Unique,
    is_identifier,
    parse_check,
    parse_checks,
    read_only_denies,
)

__all__ = [
    "Check",
    "Expression",
    "MinRows",
    "NotNull",
    "Unique",
    "implied_checks",
    "is_identifier",
    "parse_check",
    "parse_checks",
    "quote",
    "read_only",
    "run_checks",
]

SAMPLE_SIZE = 5


def quote(name: str) -> str:
    """Quote an identifier for SQLite (every identifier croft writes into SQL goes through here)."""
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def read_only(conn: sqlite3.Connection, reads: set[str] | None = None) -> Iterator[None]:
    """Run statements prepared inside this block under an authorizer that only allows reading.

    Tables of the main database that the statements read are added to ``reads`` (CTE names are not
    tables and are not reported), which is how a SQL transform learns its inputs.
    """

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, _src: str | None) -> int:
        if read_only_denies(action, arg2):
            return sqlite3.SQLITE_DENY
        reading = action == sqlite3.SQLITE_READ and db == "main"
        if reading and reads is not None and arg1 and not arg1.startswith(("sqlite_", "_croft_")):
            reads.add(arg1)
        return sqlite3.SQLITE_OK

    conn.set_authorizer(authorize)
    try:
        yield
    finally:
        conn.set_authorizer(None)


def implied_checks(key: Sequence[str]) -> list[Check]:
    """A key means its columns are unique together and never NULL."""
    if not key:
        return []
    listed = ", ".join(key)
    return [
        Unique(text=f"unique({listed})", columns=tuple(key)),
        NotNull(text=f"not_null({listed})", columns=tuple(key)),
    ]


def run_checks(
    conn: sqlite3.Connection,
    table: str,
    checks: Sequence[Check],
    *,
    stamp: str,
    columns: Sequence[str],
    asset: str | None = None,
) -> None:
    """Evaluate ``checks`` on ``table``; raise CHECK_FAILED naming the first failure (others as extras).

    ``stamp`` selects the rows this write touched; ``columns`` are the table's user columns (what a
    sample shows, and what unique/not_null may name). Must be called inside the write transaction.
    """
    failures: list[Problem] = []
    seen: set[str] = set()
    for check in checks:
        if check.text in seen:
            continue
        seen.add(check.text)
        failure = _evaluate(conn, table, check, stamp=stamp, columns=columns, asset=asset or table)
        if failure is not None:
            failures.append(failure)
    if failures:
        error = CroftError(failures[0])
        error.extra = failures[1:]
        raise error


def _evaluate(
    conn: sqlite3.Connection, table: str, check: Check, *, stamp: str, columns: Sequence[str], asset: str
) -> Problem | None:
    if isinstance(check, Unique | NotNull):
        known = {c.lower() for c in columns}
        missing = [c for c in check.columns if c.lower() not in known]
        if missing:
            return _failed(
                asset, check, 0, [], f"names column {', '.join(missing)}, which table {table} does not have"
            )
    with read_only(conn):
        if isinstance(check, Unique):
            return _unique(conn, table, check, asset)
        if isinstance(check, NotNull):
            condition = " OR ".join(f"{quote(c)} IS NULL" for c in check.columns)
            return _rows_failing(conn, table, check, condition, stamp, columns, asset)
        if isinstance(check, MinRows):
            (count,) = conn.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
            if count >= check.count:
                return None
            return _failed(
                asset, check, check.count - count, [], f"found {count} row(s), fewer than {check.count}"
            )
        assert isinstance(check, Expression), check
        written = conn.execute(f'SELECT 1 FROM {quote(table)} WHERE "_loaded_at" = ? LIMIT 1', (stamp,))
        if written.fetchone() is None:
            # This write touched no row (a first load may yield none, so the table lacks the columns the
            # expression names): there is nothing it could be false for.
            return None
        condition = f"NOT COALESCE(({check.sql}), 1)"
        return _rows_failing(conn, table, check, condition, stamp, columns, asset)


def _unique(conn: sqlite3.Connection, table: str, check: Unique, asset: str) -> Problem | None:
    cols = ", ".join(quote(c) for c in check.columns)
    present = " AND ".join(f"{quote(c)} IS NOT NULL" for c in check.columns)
    groups = conn.execute(
        f"SELECT {cols}, COUNT(*) FROM {quote(table)} WHERE {present} GROUP BY {cols} HAVING COUNT(*) > 1"
    ).fetchall()
    if not groups:
        return None
    failing = sum(group[-1] for group in groups)
    sample = [{**dict(zip(check.columns, group[:-1], strict=True)), "count": group[-1]} for group in groups]
    return _failed(asset, check, failing, sample[:SAMPLE_SIZE], f"found {len(groups)} duplicated value(s)")


def _rows_failing(
    conn: sqlite3.Connection,
    table: str,
    check: Check,
    condition: str,
    stamp: str,
    columns: Sequence[str],
    asset: str,
) -> Problem | None:
    where = f'WHERE "_loaded_at" = ? AND ({condition})'
    try:
        (failing,) = conn.execute(f"SELECT COUNT(*) FROM {quote(table)} {where}", (stamp,)).fetchone()
        if not failing:
            return None
        cols = ", ".join(quote(c) for c in columns)
        rows = conn.execute(f"SELECT {cols} FROM {quote(table)} {where} LIMIT {SAMPLE_SIZE}", (stamp,))
        sample = [dict(zip(columns, row, strict=True)) for row in rows]
    except sqlite3.DatabaseError as exc:
        raise _check_sql_error(asset, check, exc) from exc
    return _failed(asset, check, failing, sample, f"failed for {failing} row(s)")


def _check_sql_error(asset: str, check: Check, exc: sqlite3.DatabaseError) -> CroftError:
    if "not authorized" in str(exc):
        return CroftError(
            "SQL_NOT_SELECT",
            f"The check {check.text!r} on {asset} tries to do more than read.",
            "A check may only read: compare columns, call functions, or look up other tables with a "
            "subquery.",
            details={"check": check.text},
            asset=asset,
        )
    return CroftError(
        "SQL_ERROR",
        f"The check {check.text!r} on {asset} is not valid SQL here: {exc}",
        "Fix the expression; it is evaluated against the table's columns, one row at a time.",
        details={"check": check.text, "sqlite": str(exc)},
        asset=asset,
    )


def _failed(asset: str, check: Check, failing: int, sample: list[dict[str, Any]], what: str) -> Problem:
    return Problem(
        code="CHECK_FAILED",
        message=f"Check {check.text} on {asset} {what}; nothing was written.",
        hint="Fix the data at its source (or in the asset's code), or change the check, then run it again.",
        details={"check": check.text, "failing": failing, "sample": sample},
        asset=asset,
    )
