"""What a check may say, read without a database: the one parser validate and the warehouse both use.

A check is ``unique(a, b)``, ``not_null(a, b)``, ``min_rows(n)`` or one boolean SQL expression. Parsing
is pure (no SQLite), so ``croft validate`` refuses a malformed check exactly as a run would, before any
data is touched. Evaluating checks stays in ``croft.engine.checks``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from croft.core.problems import CroftError

if TYPE_CHECKING:
    pass

__all__ = [
    "DENIED_FUNCTIONS",
    "READ_ONLY_ACTIONS",
    "Check",
    "Expression",
    "MinRows",
    "NotNull",
    "Unique",
    "is_identifier",
    "parse_check",
    "parse_checks",
    "read_only_denies",
]

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# compiled (and cached by re) when a check is parsed: croft status imports this module for IDENTIFIER alone
_COLUMNS_CHECK = r"(?i)^(unique|not_null)\s*\(([^()]*)\)$"
_MIN_ROWS = r"(?i)^min_rows\s*\(\s*(\d+)\s*\)$"


# The one rule for user-written SQL (transforms, checks, and validate's compile of them): it may read
# tables, call functions and walk CTEs; writes, DDL, ATTACH, PRAGMA and file functions are refused.
READ_ONLY_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


def read_only_denies(action: int, function: str | None) -> bool:
    """Whether the read-only authorizer refuses this action (``function`` is arg2 of SQLITE_FUNCTION)."""
    if action == sqlite3.SQLITE_FUNCTION and (function or "").lower() in DENIED_FUNCTIONS:
        return True
    return action not in READ_ONLY_ACTIONS


def is_identifier(name: object) -> bool:
    """A plain SQL name: letters, digits and underscores, not starting with a digit."""
    return isinstance(name, str) and bool(IDENTIFIER.match(name))


@dataclass(frozen=True, slots=True)
class Check:
    """One parsed check; ``text`` is what the user wrote, used to name it in problems.

    ``unique(a)`` and ``not_null(a)`` hold the same fields and still differ: a dataclass equals only its
    own class."""

    text: str


@dataclass(frozen=True, slots=True)
class Unique(Check):
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NotNull(Check):
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MinRows(Check):
    count: int


@dataclass(frozen=True, slots=True)
class Expression(Check):
    sql: str


def _invalid(text: str, why: str) -> CroftError:
    return CroftError(
        "ASSET_INVALID",
        f"The check {text!r} {why}.",
        "A check is unique(a, b), not_null(a, b), min_rows(n), or one boolean SQL expression over the "
        "table's columns, such as amount >= 0.",
        details={"check": text},
    )


def parse_check(text: str) -> Check:
    """Parse one check. Raises ASSET_INVALID for anything that is not a single check or expression."""
    if not isinstance(text, str) or not text.strip():
        raise _invalid(str(text), "is empty")
    raw = text.strip()
    columns = re.match(_COLUMNS_CHECK, raw)
    if columns:
        names = tuple(part.strip() for part in columns.group(2).split(","))
        bad = [name for name in names if not is_identifier(name)]
        if not names or bad:
            raise _invalid(
                raw, f"names {', '.join(map(repr, bad)) or 'no column'}, which is not a column name"
            )
        kind = Unique if columns.group(1).lower() == "unique" else NotNull
        return kind(text=raw, columns=names)
    rows = re.match(_MIN_ROWS, raw)
    if rows:
        return MinRows(text=raw, count=int(rows.group(1)))
    _require_single_expression(raw)
    return Expression(text=raw, sql=raw)


def _require_single_expression(text: str) -> None:
    """Refuse ``;``, comments and unbalanced parentheses outside quotes: the text must stay one expression
    when croft wraps it in its own query."""
    depth = 0
    index = 0
    closers = {"'": "'", '"': '"', "`": "`", "[": "]"}
    while index < len(text):
        char = text[index]
        if char in closers:
            end = text.find(closers[char], index + 1)
            while end != -1 and char != "[" and text[end + 1 : end + 2] == closers[char]:
                end = text.find(closers[char], end + 2)  # a doubled quote is an escaped quote
            if end == -1:
                raise _invalid(text, "has an unclosed quote")
            index = end + 1
            continue
        if char == ";":
            raise _invalid(text, "contains ';' (a check is one expression, not statements)")
        if text.startswith("--", index) or text.startswith("/*", index):
            raise _invalid(text, "contains an SQL comment")
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise _invalid(text, "closes a parenthesis it never opened")
        index += 1
    if depth:
        raise _invalid(text, "leaves a parenthesis open")


def parse_checks(texts: Iterable[str | Check] | None) -> list[Check]:
    """Parse a list of checks (already-parsed ones pass through)."""
    return [t if isinstance(t, Check) else parse_check(t) for t in (texts or ())]
