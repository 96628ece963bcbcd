"""One warehouse workload in this process, for scripts/bench: prints {"wall": s, "rss": KiB, "bytes": n}.

Usage: bench_warehouse.py WORK TOOL N PHASE DB
  WORK ingest: TOOL croft | croft_refresh | floor | sqlite_utils, PHASE first | unchanged | changed (1% of rows changed)
  WORK sql:    TOOL croft | ctas, PHASE projection | groupby (the source table must exist: WORK source)
  WORK source: writes the source table of the sql workloads (not measured)
Every tool reads the same rows from the same generator; wall time covers the write only (the rows are
generated while it runs, for every tool alike); rss is this process's peak.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

BASE = datetime(2026, 1, 1, tzinfo=UTC)
COLUMNS = ("id", "name", "amount", "status", "updated_at")


DAYS = [(BASE + timedelta(days=d)).strftime("%Y-%m-%d") for d in range(800)]


def rows(n: int, phase: str) -> Iterator[dict[str, Any]]:
    """An API-like page stream: id, text, a number, a status and an ISO timestamp cursor (one second
    apart, so every value is distinct); "changed" moves 1% of rows by 400 days and changes their amount."""
    for i in range(n):
        changed = phase == "changed" and i % 100 == 0
        second = i + (86400 * 400 if changed else 0)
        clock = second % 86400
        yield {
            "id": i,
            "name": f"customer {i}",
            "amount": i * 0.25 + (1 if changed else 0),
            "status": "paid" if i % 3 else "open",
            "updated_at": f"{DAYS[second // 86400]}T{clock // 3600:02d}:{clock // 60 % 60:02d}:{clock % 60:02d}Z",
        }


def ingest_croft(db: Path, n: int, phase: str) -> None:
    from croft.engine.extract import Extraction
    from croft.engine.warehouse import Warehouse

    with Warehouse(db) as wh:
        extraction = Extraction("t", 600)  # the path `croft run` takes: a worker thread feeding batches
        batches = extraction.stream(lambda: rows(n, phase), lambda exc: exc)  # type: ignore[arg-type,return-value]
        wh.write_ingest("t", batches, key="id", cursor_field="updated_at")


def ingest_croft_refresh(db: Path, n: int, phase: str) -> None:
    """`croft run --full-refresh`'s write: every row staged, then the old table replaced in one transaction."""
    from croft.engine.extract import Extraction
    from croft.engine.warehouse import Warehouse

    with Warehouse(db) as wh:
        extraction = Extraction("t", 600)
        batches = extraction.stream(lambda: rows(n, phase), lambda exc: exc)  # type: ignore[arg-type,return-value]
        wh.write_ingest("t", batches, key="id", cursor_field="updated_at", full_refresh=True)


def ingest_floor(db: Path, n: int, phase: str) -> None:
    """croft's diff semantics at their minimum: one upsert per row in one transaction, _loaded_at changed
    only for changed rows."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS t (id INTEGER, name TEXT, amount REAL, status TEXT, updated_at TEXT, "
        "_loaded_at TEXT)"
    )
    conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS t_id ON t (id)")
    stamp = datetime.now(UTC).isoformat()
    differs = " OR ".join(f"{c} IS NOT excluded.{c}" for c in COLUMNS[1:])
    sets = ", ".join(f"{c} = excluded.{c}" for c in (*COLUMNS[1:], "_loaded_at"))
    conn.execute("BEGIN")
    conn.executemany(
        f"INSERT INTO t VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET {sets} WHERE {differs}",
        ((r["id"], r["name"], r["amount"], r["status"], r["updated_at"], stamp) for r in rows(n, phase)),
    )
    conn.execute("COMMIT")
    conn.close()


def ingest_sqlite_utils(db: Path, n: int, phase: str) -> None:
    import sqlite_utils  # type: ignore[import-not-found]

    database = sqlite_utils.Database(db)
    database["t"].upsert_all(rows(n, phase), pk="id")
    database.close()


def make_source(db: Path, n: int) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE src (id INTEGER, name TEXT, amount REAL, status TEXT, updated_at TEXT)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO src VALUES (?, ?, ?, ?, ?)", (tuple(r.values()) for r in rows(n, "first")))
    conn.execute("CREATE UNIQUE INDEX src_id ON src (id)")
    conn.execute("COMMIT")
    conn.close()


def sql_of(phase: str, n: int) -> tuple[str, str]:
    """(SELECT, key) of a SQL workload: a 1:1 projection, or a GROUP BY to n/10 rows."""
    if phase == "projection":
        return "SELECT id, name, amount * 2 AS doubled, upper(status) AS status FROM src", "id"
    buckets = max(1, n // 10)
    return (
        f"SELECT id % {buckets} AS bucket, COUNT(*) AS n, SUM(amount) AS total, MAX(updated_at) AS latest "
        "FROM src GROUP BY bucket",
        "bucket",
    )


def sql_croft(db: Path, n: int, phase: str) -> None:
    from croft.engine.warehouse import Warehouse

    sql, key = sql_of(phase, n)
    with Warehouse(db) as wh:
        wh.write_transform_sql("t", sql, key=key, inputs=["src"])


def sql_ctas(db: Path, n: int, phase: str) -> None:
    sql, _ = sql_of(phase, n)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("DROP TABLE IF EXISTS t")
    conn.execute(f"CREATE TABLE t AS {sql}")
    conn.execute("COMMIT")
    conn.close()


WORKS = {
    ("ingest", "croft"): ingest_croft,
    ("ingest", "croft_refresh"): ingest_croft_refresh,
    ("ingest", "floor"): ingest_floor,
    ("ingest", "sqlite_utils"): ingest_sqlite_utils,
    ("sql", "croft"): sql_croft,
    ("sql", "ctas"): sql_ctas,
}


def file_bytes(db: Path) -> int:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def main(argv: list[str]) -> int:
    work, tool, n, phase, db = argv[0], argv[1], int(argv[2]), argv[3], Path(argv[4])
    if work == "source":
        make_source(db, n)
        return 0
    if tool in ("croft", "croft_refresh"):  # imports are not the write: load them before the clock starts
        import croft.engine.extract
        import croft.engine.warehouse  # noqa: F401
    elif tool == "sqlite_utils":
        import sqlite_utils  # type: ignore[import-not-found]  # noqa: F401
    started = time.perf_counter()
    WORKS[(work, tool)](db, n, phase)
    wall = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"wall": wall, "rss": rss, "bytes": file_bytes(db), "pid": os.getpid()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
