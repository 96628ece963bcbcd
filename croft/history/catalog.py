"""The catalog mirror: each asset's last known table facts (rows, cursor, load stamps, code hash) as JSON.

The warehouse's own bookkeeping is the truth; this copy lets staleness checks and the tick answer without
opening the warehouse. It is rewritten after every commit and repaired by reconcile.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from croft.core.clock import now, to_iso
from croft.history.db import immediate, translate_sqlite_errors

if TYPE_CHECKING:
    from typing import Any

__all__ = ["SOURCES", "all_entries", "delete_entry", "get_entry", "put_entry"]

# Who wrote the entry: a run's commit, a preview, or pinned types.
SOURCES = ("run", "preview", "pins")


@translate_sqlite_errors("reading the catalog")
def get_entry(conn: sqlite3.Connection, asset: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT json FROM catalog WHERE asset = ?", (asset,)).fetchone()
    return None if row is None else dict(json.loads(row["json"]))


@translate_sqlite_errors("reading the catalog")
def all_entries(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Every asset's entry in one query (the tick reads them all at once)."""
    return {r["asset"]: json.loads(r["json"]) for r in conn.execute("SELECT asset, json FROM catalog")}


def put_entry(conn: sqlite3.Connection, asset: str, entry: dict[str, Any], source: str = "run") -> None:
    """Replace the asset's entry, stamped with now."""
    assert source in SOURCES, f"unknown catalog source {source}"
    with immediate(conn, f"updating the catalog entry of {asset}"):
        conn.execute(
            "INSERT INTO catalog (asset, json, source, refreshed_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(asset) DO UPDATE SET json = excluded.json, source = excluded.source,"
            " refreshed_at = excluded.refreshed_at",
            (asset, json.dumps(entry, ensure_ascii=False, separators=(",", ":")), source, to_iso(now())),
        )


def delete_entry(conn: sqlite3.Connection, asset: str) -> None:
    with immediate(conn, f"removing the catalog entry of {asset}"):
        conn.execute("DELETE FROM catalog WHERE asset = ?", (asset,))
