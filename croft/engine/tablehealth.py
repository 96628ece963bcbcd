"""Tables changed behind croft's back: dropped, emptied, or with columns croft did not write.

A table croft built is recorded twice: its bookkeeping in the warehouse and its catalog entry in
runs.sqlite (rows, cursor, and since this look the columns croft left it with). Neither changes when
someone drops or empties the table with another tool, so without this look status would call the data
"fresh" and an incremental ingest would fetch only what is newer than its cursor into an empty table,
losing every older row without a word. ``observe`` is the thin shell that reads the warehouse
read-only; ``table_problem`` the pure rule every view (status, schedule status, doctor) and the run share.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core import sqlitefile
from croft.core.problems import Problem, problem
from croft.history import catalog
from croft.history.db import open_readonly
from croft.project.discovery import discover

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Seen",
    "fix_command",
    "lost_rows",
    "observe",
    "problems_for",
    "project_problems",
    "rows_now",
    "seen_in",
    "table_problem",
]

_RESERVED = frozenset({"_loaded_at", "_row_hash"})


@dataclass(frozen=True)
class Seen:
    """What the warehouse holds under an asset's name right now."""

    exists: bool
    columns: tuple[str, ...] = ()
    has_rows: bool = False
    warehouse: bool = True  # False: the warehouse file itself is gone (its bookkeeping with it)


def observe(database: Path, names: Iterable[str]) -> dict[str, Seen]:
    """Each named table as it is now, read-only; {} when the warehouse cannot be read (status then says
    nothing rather than guess: a busy file is not a dropped table). A warehouse file that is not there at
    all is every table gone (``Seen.warehouse`` False)."""
    wanted = list(names)
    if not wanted:
        return {}
    if not Path(database).exists():
        return {name: Seen(False, warehouse=False) for name in wanted}
    if not Path(database).is_file():
        return {}
    try:
        conn = sqlitefile.connect(database, "read", timeout=1.0)
    except sqlite3.Error:
        return {}
    found: dict[str, Seen] = {}
    try:
        for name in wanted:
            found[name] = seen_in(conn, name)
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    return found


def seen_in(conn: sqlite3.Connection, name: str) -> Seen:
    """The table ``name`` as ``conn`` sees it (a write transaction sees its own state)."""
    quoted = '"' + name.replace('"', '""') + '"'
    info = conn.execute(f"PRAGMA table_info({quoted})").fetchall()
    if not info:
        return Seen(False)
    columns = tuple(str(row[1]) for row in info if str(row[1]).lower() not in _RESERVED)
    has_rows = conn.execute(f"SELECT 1 FROM {quoted} LIMIT 1").fetchone() is not None
    return Seen(True, columns, has_rows)


def rows_now(database: Path, name: str) -> int | None:
    """How many rows the table holds now (None: no such table, or no warehouse to read): what a full
    refresh says it replaces before it asks."""
    if not Path(database).is_file():
        return None
    try:
        conn = sqlitefile.connect(database, "read", timeout=1.0)
    except sqlite3.Error:
        return None
    try:
        if not seen_in(conn, name).exists:
            return None
        quoted = '"' + name.replace('"', '""') + '"'
        (count,) = conn.execute(f"SELECT COUNT(*) FROM {quoted}").fetchone()
        return int(count)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def lost_rows(problem_found: Problem | None) -> bool:
    """Whether a table problem means the rows are gone (dropped or emptied), which an incremental ingest
    must not run over from its old cursor; changed columns leave the rows there."""
    if problem_found is None:
        return False
    cause = (problem_found.details or {}).get("cause")
    # a warehouse deleted whole took the cursors with it: a plain run loads everything, nothing to refuse
    return cause in ("missing", "emptied")


def fix_command(asset: str, kind: str, incremental: bool) -> str:
    """What rebuilds the table: an incremental ingest from the source's beginning, anything else a plain
    run (a full ingest or a transform writes every row anyway)."""
    if kind == "ingest" and incremental:
        return f"croft run {asset} --full-refresh"
    return f"croft run {asset}"


def table_problem(
    asset: str, kind: str, incremental: bool, entry: Mapping[str, Any] | None, seen: Seen | None
) -> Problem | None:
    """TABLE_MISSING or TABLE_CHANGED for an asset croft built (``entry``, its catalog entry) whose table
    is not what croft left; None when it is, or when croft never built it or could not look."""
    if entry is None or seen is None:
        return None
    command = fix_command(asset, kind, incremental)
    fix = {"kind": "command", "command": command, "description": "load the table again"}
    rows = int(entry.get("rows") or 0)
    cursor = (entry.get("cursor") or {}).get("value")
    why = (
        f"; a plain run would fetch only what is newer than its cursor {cursor!r}"
        if kind == "ingest" and incremental and cursor is not None
        else ""
    )
    if not seen.warehouse:
        plain = f"croft run {asset}"
        return problem(
            "TABLE_MISSING",
            f"the table {asset} is gone with the whole warehouse file (croft last wrote it with {rows} rows)",
            f"The warehouse was deleted or moved, its cursors with it. `{plain}` loads it again from the"
            " source's beginning.",
            asset=asset,
            fix={"kind": "command", "command": plain, "description": "load the table again"},
            details={"cause": "warehouse_missing", "rows": rows, "cursor": None},
        )
    if not seen.exists:
        return problem(
            "TABLE_MISSING",
            f"the table {asset} is gone from the warehouse (croft last wrote it with {rows} rows){why}",
            f"Something outside croft dropped it. `{command}` loads it again and rebuilds what reads it.",
            asset=asset,
            fix=fix,
            details={"cause": "missing", "rows": rows, "cursor": cursor},
        )
    if rows and not seen.has_rows:
        return problem(
            "TABLE_CHANGED",
            f"the table {asset} is empty (croft last wrote it with {rows} rows){why}",
            f"Something outside croft emptied it. `{command}` loads it again and rebuilds what reads it.",
            asset=asset,
            fix=fix,
            details={"cause": "emptied", "rows": rows, "cursor": cursor},
        )
    wrote = [str(c) for c in entry.get("columns") or []]
    if not wrote:
        return None  # built before croft noted the columns: nothing to compare with
    now_lower = {c.lower() for c in seen.columns}
    wrote_lower = {c.lower() for c in wrote}
    gone = [c for c in wrote if c.lower() not in now_lower]
    added = [c for c in seen.columns if c.lower() not in wrote_lower]
    if not gone and not added:
        return None
    parts = []
    if gone:
        parts.append(f"lost column(s) {', '.join(gone)}")
    if added:
        parts.append(f"gained column(s) {', '.join(added)}")
    return problem(
        "TABLE_CHANGED",
        f"the table {asset} {' and '.join(parts)} since croft last wrote it",
        f"Something outside croft altered it. `{command}` writes it again as its asset defines it.",
        severity="warning",
        asset=asset,
        fix=fix,
        details={"cause": "columns", "missingColumns": gone, "extraColumns": added},
    )


def problems_for(
    database: Path,
    assets: Mapping[str, tuple[str, bool]],
    entries: Mapping[str, Mapping[str, Any]],
) -> dict[str, Problem]:
    """asset -> its table problem, for ``{asset: (kind, incremental)}`` with a catalog entry in ``entries``."""
    built = [name for name in assets if name in entries]
    seen = observe(database, built)
    out: dict[str, Problem] = {}
    for name in built:
        kind, incremental = assets[name]
        found = table_problem(name, kind, incremental, entries.get(name), seen.get(name))
        if found is not None:
            out[name] = found
    return out


def project_problems(project: Any, kinds: Mapping[str, tuple[str, bool]] | None = None) -> list[Problem]:
    """The table problems of a project's assets, for the views that have no catalog open (schedule status,
    doctor): ``{asset: (kind, incremental)}`` as the caller read them, else its facts read statically here;
    its catalog read-only; [] when there is no history yet."""
    if kinds is None:
        facts, _ = discover(project)
        kinds = {name: (f.kind, bool(f.incremental)) for name, f in facts.items()}
    conn = open_readonly(project.config.state_dir)
    if conn is None:
        return []
    try:
        entries = catalog.all_entries(conn)
    except Exception:  # a history this croft cannot read is the history's own problem, said elsewhere
        return []
    finally:
        conn.close()
    return list(problems_for(project.config.database, kinds, entries).values())
