"""The status page's benchmark behind ``scripts/bench ui``: a project of 100 and of 1000 assets (half
hourly ingests, half SQL transforms over them) with 100,000 runs in its last week, served by a real
``croft ui`` process. Measured: the overview's first byte and full load against ``croft status --json``
on the same project, the JSON's size, the server's memory, and its CPU while tabs stay open and nothing
changes (``--idle S`` sets that span; the default is two minutes).

Fixtures are built the fast way: the project is run once for real (so its tables, catalog and approvals
are croft's own), and the older runs are inserted in the shape croft writes them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CROFT = [sys.executable, "-m", "croft"]
NOW = "2026-03-10T12:00:00Z"
RUNS = 100_000

_INGEST = '''from croft import ingest


@ingest(schedule="every hour", key="id", description="Source number {i}")
def {name}(ctx):
    yield {{"id": 1, "n": {i}}}
'''
_SQL = "-- key: id\n-- description: Report over {source}\nSELECT id, n * 2 AS m FROM {source}\n"


def build(folder: Path, assets: int, runs: int, env: dict[str, str]) -> Path:
    """A project of ``assets`` assets run once at ``NOW`` minus a minute, then ``runs`` older runs."""
    folder.mkdir(parents=True)
    (folder / "assets").mkdir()
    (folder / "croft.json").write_text(json.dumps({"timezone": "UTC"}))
    half = assets // 2
    for i in range(half):
        name = f"source_{i:04d}"
        (folder / "assets" / f"{name}.py").write_text(_INGEST.format(i=i, name=name))
        (folder / "assets" / f"report_{i:04d}.sql").write_text(_SQL.format(source=name))
    out = subprocess.run(
        [*CROFT, "run", "--json"], cwd=folder, env=env | {"CROFT_NOW": "2026-03-10T11:00:00Z"},
        capture_output=True, text=True,
    )
    if not json.loads(out.stdout).get("ok"):
        raise SystemExit(f"the fixture's run failed: {out.stdout[:2000]} {out.stderr[-2000:]}")
    _old_runs(folder / ".croft", runs, half)
    return folder


def _old_runs(state: Path, count: int, half: int) -> None:
    """``count`` scheduled runs over the week before the real one: an ingest step and its report, one in
    twenty failed (its report skipped)."""
    from croft.history.db import open_history

    conn = open_history(state)
    try:
        conn.execute("BEGIN")
        start = dt.datetime(2026, 3, 3, 11, tzinfo=dt.UTC).timestamp()
        gap = 7 * 86400 / count
        runs, steps = [], []
        for i in range(count):
            at = dt.datetime.fromtimestamp(start + i * gap, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            end = dt.datetime.fromtimestamp(start + i * gap + 2, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            run = f"r_{at[5:7]}{at[8:10]}_{at[11:13]}{at[14:16]}_{i:06x}"
            n = i % half
            failed = i % 20 == 0
            runs.append((run, at, end, "failed" if failed else "succeeded"))
            error = json.dumps({"code": "HTTP_ERROR", "message": "HTTP 503 from the API"}) if failed else None
            steps.append((run, f"source_{n:04d}", "failed" if failed else "ok", at, end, error))
            steps.append((run, f"report_{n:04d}", "skipped" if failed else "ok", end, end, None))
        conn.executemany(
            "INSERT INTO runs (id, trigger, human, argv, pid, proc_start, boot_id, started_at, finished_at,"
            " status) VALUES (?, 'schedule', 0, '[]', 4242, '1', 'boot', ?, ?, ?)",
            runs,
        )
        conn.executemany(
            "INSERT INTO steps (run_id, asset, attempt, status, reason, started_at, finished_at, error)"
            " VALUES (?, ?, 1, ?, 'requested', ?, ?, ?)",
            steps,
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    env = dict(os.environ) | {"CROFT_HOME": str(folder.parent / "home"), "CROFT_NOTIFY_DRY": "1"}
    t0 = time.time()
    build(folder, int(sys.argv[2]), int(sys.argv[3]), env)
    print("built in", time.time() - t0)
