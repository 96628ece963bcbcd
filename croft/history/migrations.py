"""The schema of runs.sqlite as named, ordered migrations; PRAGMA user_version counts how many are applied.

Each migration is a plain function taking a connection already inside a transaction (``db.migrate`` opens
it, runs the function, records it and bumps user_version before COMMIT). Statements are executed one by
one, never with ``executescript``, which would COMMIT behind our back. Reading what is applied or
pending never writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "COST_GUARD_WHERE",
    "GENERATION_TABLES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "applied",
    "m001_core_tables",
    "m002_settings",
    "m003_history_indexes",
    "m004_bounded_reads",
    "pending",
    "user_version",
]

Migration = Callable[[sqlite3.Connection], None]


def _run(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    for statement in statements:
        conn.execute(statement)


def m001_core_tables(conn: sqlite3.Connection) -> None:
    """Runs, steps, leases, schedule state, the tick row, the catalog mirror and the migration record."""
    _run(
        conn,
        [
            """CREATE TABLE migrations (
                version INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL
            )""",
            """CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                trigger TEXT NOT NULL,
                human INTEGER NOT NULL,
                argv TEXT NOT NULL,
                pid INTEGER,
                proc_start TEXT,
                boot_id TEXT,
                started_at TEXT NOT NULL,
                finished_at TEXT,
                status TEXT NOT NULL,
                summary TEXT
            )""",
            "CREATE INDEX runs_status ON runs(status)",
            """CREATE TABLE steps (
                run_id TEXT NOT NULL,
                asset TEXT NOT NULL,
                attempt INTEGER NOT NULL,
                status TEXT NOT NULL,
                reason TEXT,
                started_at TEXT NOT NULL,
                finished_at TEXT,
                rows_in INTEGER NOT NULL DEFAULT 0,
                added INTEGER NOT NULL DEFAULT 0,
                updated INTEGER NOT NULL DEFAULT 0,
                unchanged INTEGER NOT NULL DEFAULT 0,
                deleted INTEGER NOT NULL DEFAULT 0,
                error TEXT,
                code_hash TEXT,
                log_path TEXT,
                PRIMARY KEY (run_id, asset, attempt)
            )""",
            "CREATE INDEX steps_asset_started ON steps(asset, started_at)",
            """CREATE TABLE leases (
                asset TEXT PRIMARY KEY,
                run_id TEXT NOT NULL,
                pid INTEGER NOT NULL,
                proc_start TEXT,
                boot_id TEXT,
                since TEXT NOT NULL
            )""",
            """CREATE TABLE schedule_state (
                asset TEXT PRIMARY KEY,
                phrase TEXT,
                cron TEXT,
                file_hash TEXT,
                last_fire_at TEXT,
                last_attempt_at TEXT,
                approved_code_hash TEXT
            )""",
            """CREATE TABLE tick (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                pid INTEGER,
                proc_start TEXT,
                boot_id TEXT,
                heartbeat_at TEXT
            )""",
            """CREATE TABLE catalog (
                asset TEXT PRIMARY KEY,
                json TEXT NOT NULL,
                source TEXT NOT NULL,
                refreshed_at TEXT NOT NULL
            )""",
        ],
    )


def m002_settings(conn: sqlite3.Connection) -> None:
    """Key -> JSON settings (scheduling on/off/paused, the facts cache, spawned runs, failed starts)."""
    _run(conn, ["CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)"])


def m003_history_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for `croft logs` (newest first, --failed, by asset) and for pruning by age."""
    _run(
        conn,
        [
            "CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at)",
            "CREATE INDEX IF NOT EXISTS runs_status_started ON runs(status, started_at)",
            "CREATE INDEX IF NOT EXISTS steps_started ON steps(started_at)",
            "CREATE INDEX IF NOT EXISTS steps_status_started ON steps(status, started_at)",
            "CREATE INDEX IF NOT EXISTS steps_asset_status_started ON steps(asset, status, started_at)",
        ],
    )


# The tables whose rows the due decision reads. Every write to them bumps ``generation`` in the same
# transaction (by trigger, so no writer can forget, the scheduler's raw UPDATEs included): the idle
# tick compares one integer instead of reading the whole history.
GENERATION_TABLES = ("runs", "steps", "schedule_state", "catalog", "leases")
# The cost guard's records: a step a scheduled run stopped at LARGE_REPROCESS. A partial index holds
# only those (none, until a guard exists), so looking for them never reads the other steps.
COST_GUARD_WHERE = "error LIKE '%\"LARGE_REPROCESS\"%'"


def m004_bounded_reads(conn: sqlite3.Connection) -> None:
    """Reads that do not grow with the history: a generation counter for the idle tick, each asset's
    latest step by one index probe, the cost guard's steps in a partial index, and step logs kept as
    rows (one per attempt with a log) instead of a file each."""
    statements = [
        "CREATE TABLE generation (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)",
        "INSERT INTO generation (id, n) VALUES (1, 0)",
        # (asset, started_at, attempt) and the rowid every index ends with: the latest step of an asset,
        # ties to the highest attempt then the latest row, is the last entry of its range
        "CREATE INDEX steps_asset_latest ON steps(asset, started_at, attempt)",
        "DROP INDEX IF EXISTS steps_asset_started",
        f"CREATE INDEX steps_cost_guard ON steps(asset, started_at) WHERE {COST_GUARD_WHERE}",
        """CREATE TABLE step_logs (
            run_id TEXT NOT NULL,
            asset TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (run_id, asset, attempt)
        )""",
    ]
    for table in GENERATION_TABLES:
        for event in ("INSERT", "UPDATE", "DELETE"):
            statements.append(
                f"CREATE TRIGGER {table}_{event.lower()}_generation AFTER {event} ON {table}"
                " BEGIN UPDATE generation SET n = n + 1 WHERE id = 1; END"
            )
    _run(conn, statements)


MIGRATIONS: tuple[Migration, ...] = (
    m001_core_tables,
    m002_settings,
    m003_history_indexes,
    m004_bounded_reads,
)
SCHEMA_VERSION = len(MIGRATIONS)


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def pending(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> list[Migration]:
    """The migrations this database still needs, in order (empty when current or newer)."""
    return list(migrations[user_version(conn) :])


def applied(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """The recorded migrations, oldest first: ``{version, name, applied_at}``."""
    if user_version(conn) == 0:
        return []
    rows = conn.execute("SELECT version, name, applied_at FROM migrations ORDER BY version").fetchall()
    return [{"version": r[0], "name": r[1], "applied_at": r[2]} for r in rows]
