"""Streaming ingests as real processes: flat memory, no warehouse lock while rows arrive, SIGKILL-safe."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from enginekit import croft, cursor, table

pytestmark = pytest.mark.processes

# A `croft run` in a child process that reports its own peak RSS (KiB on Linux) on stderr's last line.
MEASURED_RUN = """
import resource, sys
from croft.cli.main import main
try:
    main(["run", "--json"])
except SystemExit:
    pass
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""

MANY_ROWS = """
import os
from croft import ingest

N = int(os.environ["ROWS"])


@ingest(key="id", incremental="n")
def many(ctx):
    for i in range(N):
        yield {{"id": i, "n": i, "name": f"row {{i}}", "amount": i * 0.5, "tags": ["a", "b"]}}
        {extra}
"""


def peak_kib(root: Path, rows: int) -> int:
    done = subprocess.run(
        [sys.executable, "-c", MEASURED_RUN],
        cwd=root,
        env={**_env(), "ROWS": str(rows)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert json.loads(done.stdout)["ok"], done.stdout
    return int(done.stderr.strip().splitlines()[-1])


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "CROFT_FAULT"}


def test_a_200k_row_ingest_keeps_memory_flat(make_project, tmp_path: Path) -> None:
    small = make_project({"assets/many.py": MANY_ROWS.format(extra="")}, root=tmp_path / "small")
    large = make_project({"assets/many.py": MANY_ROWS.format(extra="")}, root=tmp_path / "large")
    peak_small = peak_kib(small, 20_000)
    peak_large = peak_kib(large, 200_000)
    assert table(large, "many")[-1]["id"] == 199_999
    grown_mib = (peak_large - peak_small) / 1024
    # Holding 200k rows as dicts (as before streaming) grows the process by well over 100 MiB.
    assert grown_mib <= 40, (peak_small, peak_large)


def test_the_warehouse_is_not_locked_while_rows_arrive(make_project) -> None:
    probe = """
        if i == 5000:
            other = __import__("sqlite3").connect("warehouse.sqlite", timeout=0, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            other.execute("CREATE TABLE written_meanwhile (x)")
            other.execute("COMMIT")
            other.close()"""
    root = make_project({"assets/many.py": MANY_ROWS.format(extra=probe.strip())})
    code, out = croft(root, "run", env={"ROWS": "10000"})
    assert code == 0, out
    conn = sqlite3.connect(root / "warehouse.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM written_meanwhile").fetchone() == (0,)
    assert conn.execute("SELECT COUNT(*) FROM many").fetchone() == (10_000,)


def test_sigkill_in_the_middle_of_a_streamed_load_leaves_nothing_half_written(make_project) -> None:
    kill = """
        if i == 60_000 and os.environ.get("KILL"):
            os.kill(os.getpid(), 9)"""
    root = make_project({"assets/many.py": MANY_ROWS.format(extra=kill.strip())})
    code, _ = croft(root, "run", env={"ROWS": "1000"})
    assert code == 0
    before, saved = table(root, "many"), cursor(root, "many")
    files_before = sorted(p.name for p in root.iterdir())
    child = subprocess.run(
        [sys.executable, "-m", "croft", "run", "--json"],
        cwd=root,
        env={**_env(), "ROWS": "100000", "KILL": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert table(root, "many") == before and cursor(root, "many") == saved == 999
    assert sorted(p.name for p in root.iterdir()) == files_before  # no stray stage file beside the warehouse
    code, again = croft(root, "run", env={"ROWS": "100000"})
    assert code == 0 and cursor(root, "many") == 99_999
    step = again["data"]["steps"][0]
    assert (step["rows"]["added"], step["rows"]["unchanged"]) == (99_000, 1000)
