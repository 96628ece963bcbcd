"""The catalog mirror: what runs.sqlite knows of each built table, copied from the warehouse after a commit.

``croft status`` and the scheduler read staleness from here without opening the warehouse. The warehouse
stays the truth: reconcile re-copies it for assets a crashed run touched.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from croft.core.clock import now, to_iso
from croft.history import catalog

__all__ = ["mirror"]


def entry_from_state(
    asset: str, kind: str, state: dict[str, Any], seen: dict[str, str], columns: list[str] | None = None
) -> dict[str, Any]:
    """The entry; ``columns`` are the table's columns as croft left it (``engine.tablehealth`` compares)."""
    return {
        "asset": asset,
        "kind": kind,
        "rows": state.get("row_count"),
        "write": state.get("write_mode"),
        "key": state.get("key_columns") or [],
        "lastLoadedAt": state.get("last_loaded_at"),
        "lastReplacedAt": state.get("last_replaced_at"),
        "codeHash": state.get("code_hash"),
        "cursor": (
            {"field": state.get("cursor_field"), "value": state.get("cursor_value")}
            if state.get("cursor_field")
            else None
        ),
        "inputsSeen": {name: {"inputLastLoadedAt": version} for name, version in sorted(seen.items())},
        "refreshedAt": to_iso(now()),
        **({"columns": columns} if columns is not None else {}),
    }


def mirror(conn: sqlite3.Connection, warehouse: Any, assets: dict[str, str]) -> None:
    """Copy each ``{asset: kind}`` from the warehouse into runs.sqlite's catalog table."""
    for asset, kind in assets.items():
        state = warehouse.state(asset)
        if state is None:
            continue
        columns = warehouse.columns(asset) if warehouse.has_table(asset) else None
        entry = entry_from_state(asset, kind, state, warehouse.inputs_seen(asset), columns)
        catalog.put_entry(conn, asset, entry)
