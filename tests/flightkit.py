"""The flight plan's project: six ingests whose plan covers every rule of the due policy at once, shared by
its end-to-end test (tests/e2e/test_flight_plan.py) and its benchmark (scripts/bench simulate).

Hourly, every 15 minutes, daily at 01:30 across the night London's clocks go back (01:30 happens twice;
it fires once), one held (edited after the run by hand that approved it), one with quiet hours and one
with a jitter; the hourly one and the one every 15 minutes share a pool of 1 (``CONFIG``). ``START`` is the
Saturday morning before that night.
"""

from __future__ import annotations

from pathlib import Path

START = "2026-10-24T08:00:00Z"  # 09:00 BST
APPROVED_AT = "2026-10-24T07:59:00Z"
INGEST = """
from croft import ingest


@ingest({args}, key="id")
def rows(ctx):
    yield [{{"id": 1, "n": {n}}}]
"""
# name -> what its @ingest says beside its key
ASSETS = {
    "hourly": 'schedule="every hour", pool="api"',
    "quarter": 'schedule="every 15 minutes", pool="api"',
    "daily": 'schedule="every day at 01:30"',
    "held": 'schedule="every hour"',
    "night": 'schedule="every hour", quiet=["22:00-06:00"]',
    "spread": 'schedule="every 2 hours", jitter="7m"',
}
CONFIG = {"pools": {"api": 1}}  # croft.json's keys beside the timezone


def files(n: int = 1) -> dict[str, str]:
    """The asset files (``n`` changes their code, as an edit does)."""
    return {f"assets/{name}.py": INGEST.format(args=args, n=n) for name, args in ASSETS.items()}


def edit_held(root: Path) -> None:
    """Edit the held ingest after it was run by hand: the scheduler holds it until a person runs it."""
    (root / "assets" / "held.py").write_text(INGEST.format(args=ASSETS["held"], n=2))
