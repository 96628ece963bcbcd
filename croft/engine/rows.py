"""Pure row-level parts of a warehouse write: stamps, SQLite types, row hashes, value conversion."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from croft.engine.cursor import parse_timestamp

__all__ = [
    "INT_RANGE",
    "convert",
    "format_stamp",
    "next_stamp",
    "row_hash",
    "sql_type",
]

INT_RANGE = (-(2**63), 2**63 - 1)


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


def convert(value: Any) -> Any:
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
