"""What a write asks for (mode, key, table name, SQL), checked before any transaction begins."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from croft.core.problems import CroftError
from croft.engine.checks import is_identifier

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
