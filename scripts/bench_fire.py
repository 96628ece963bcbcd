"""The "fire" benchmark behind ``scripts/bench fire``: from a fire's minute to the row in the warehouse,
croft beside a plain crontab line running the same asset.

Cron starts both commands at the minute; its own delay is the same for both, so the bench starts them
itself, the way cron would, and measures whole processes: what the OS job runs (``python -m croft tick
--all``, the minute gate, then the project tick and the scheduled run it starts) against ``cd project &&
python -m croft run ASSET``, each until the run's row is in the project's history as succeeded (polled
every 5 ms). Two copies of one project of one daily ingest (100 rows), each fire a day apart on the
moved clock (``CROFT_NOW``), alone on the machine, in turns. ``run()`` returns the section's body and
whether the goal was met.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

CROFT = [sys.executable, "-m", "croft"]
ROUNDS = 7
GOAL_S = 1.0  # what croft may add to a plain crontab line, from the fire to the row
BODY = "    rows = [{'id': i, 'amount': i * 3} for i in range(100)]\n"


def _succeeded(root: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{root / '.croft' / 'runs.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'succeeded'").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _until_row(argv: list[str], cwd: Path, env: dict[str, str], root: Path, limit_s: float = 60.0) -> float:
    """Seconds from starting ``argv`` to one more succeeded run in ``root``'s history."""
    before = _succeeded(root)
    began = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while _succeeded(root) <= before:
            if time.perf_counter() - began > limit_s:
                raise SystemExit(f"no row from {argv} in {limit_s:g} s")
            time.sleep(0.005)
        return time.perf_counter() - began
    finally:
        proc.wait(timeout=60)


def fire(tmp: Path) -> tuple[list[str], list[str]]:
    import bench_scale

    env0 = dict(os.environ) | {"CROFT_JOB_LABEL": "dev.croft.bench", "CROFT_NOTIFY_DRY": "1"}
    template = bench_scale._template(
        tmp / "fire-template",
        env0 | {"CROFT_HOME": str(tmp / "h0"), "CROFT_NOW": "2026-03-01T02:30:00Z"},
        1,
        0,
    )
    home = tmp / "fire-home"
    scheduled = bench_scale._projects(template, tmp / "fire", home, 1)[0]
    plain = tmp / "plain"
    shutil.copytree(template, plain, symlinks=True)
    croft_s, plain_s = [], []
    for day in range(ROUNDS):
        at = f"2026-03-{day + 2:02d}T03:00:00Z"  # the ingest's daily fire, one a day
        env = env0 | {"CROFT_HOME": str(home), "CROFT_NOW": at}
        turns = [("croft", scheduled), ("plain", plain)]
        for who, root in turns if day % 2 == 0 else reversed(turns):
            if who == "croft":
                croft_s.append(_until_row([*CROFT, "tick", "--all"], home, env, root))
            else:
                plain_env = env | {"CROFT_HOME": str(tmp / "plain-home")}
                plain_s.append(_until_row([*CROFT, "run", "source_00"], plain, plain_env, root))
    croft_med, plain_med = statistics.median(croft_s), statistics.median(plain_s)
    added = croft_med - plain_med
    goals = [
        bench_scale._line(
            f"croft adds at most {GOAL_S:g} s to a plain crontab line, from the fire to the row",
            f"{croft_med:.2f} s against {plain_med:.2f} s: {added:+.2f} s ({croft_med / plain_med:.2f}×),"
            f" median of {ROUNDS} fires",
            added <= GOAL_S,
        )
    ]
    notes = [
        "- *fire*: one daily ingest of 100 rows in two copies of one project; croft's copy scheduled (the"
        " OS job's command `python -m croft tick --all`: the minute gate, the project tick in that process,"
        " then `croft run --due`), the other run by `cd project && python -m croft run source_00`, as a"
        " plain crontab line would; each timed alone from its start to its run's succeeded row, in turns.",
        f"- croft each fire (s): {', '.join(f'{s:.2f}' for s in croft_s)}; plain line:"
        f" {', '.join(f'{s:.2f}' for s in plain_s)}.",
    ]
    return goals, notes


def run() -> tuple[str, bool]:
    with tempfile.TemporaryDirectory(prefix="croft-fire-") as folder:
        goals, notes = fire(Path(folder))
    body = "\n".join(
        [
            "From a fire's minute to the row in the warehouse: croft's scheduled run beside a plain crontab"
            " line. Whole processes, medians within one run.",
            "",
            "| goal | measured | met |",
            "|---|---|---|",
            *goals,
            "",
            *notes,
        ]
    )
    return body, not any("| **no** |" in g for g in goals)


if __name__ == "__main__":
    text, ok = run()
    print(text)
    sys.exit(0 if ok else 1)
