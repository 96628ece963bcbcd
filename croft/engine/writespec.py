"""What a write asks for (mode, key, table name, SQL), checked before any transaction begins."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from croft.core.problems import CroftError
from croft.engine.checks import is_identifier
from croft.project.rules import resolved_write_mode

__all__ = [
    "Kind",
    "Mode",
    "WriteSpec",
    "key_tuple",
    "require_select",
    "require_table_name",
    "resolve_mode",
]

Mode = Literal["replace", "merge", "append"]
Kind = Literal["ingest", "sql", "python"]
STATEMENT_START = re.compile(r"^\s*(?:(?:--[^\n]*(?:\n|$))|(?:/\*.*?\*/)|\s)*(\w+)", re.DOTALL)


@dataclass(frozen=True)
class WriteSpec:
    """What one write asks for, checked before its transaction begins."""

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
    # a full refresh: the saved cursor is not carried over and the old table is replaced whole, in the
    # write's one transaction (so until it commits the old table and cursor stay as they were)
    full_refresh: bool = False


def resolve_mode(mode: str | None, key: Sequence[str], cursor_field: str | None, asset: str) -> Mode:
    """The write mode (croft-engine §2.2), by the one rule ``croft validate`` also applies
    (``project.rules.write_mode_problem``)."""
    return resolved_write_mode(mode, key, bool(cursor_field), asset)  # type: ignore[return-value]


def key_tuple(key: str | Sequence[str] | None) -> tuple[str, ...]:
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


def require_table_name(asset: str) -> None:
    if not is_identifier(asset) or asset.lower().startswith(("_croft", "sqlite_")):
        raise CroftError(
            "NAME_INVALID",
            f"{asset!r} cannot be a table name in the warehouse.",
            "Asset names are letters, digits and underscores, not starting with _croft or sqlite_.",
            details={"name": asset},
        )


def require_select(asset: str, sql: str) -> None:
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
