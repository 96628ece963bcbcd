"""Damage that is not a bug in croft gets its own code, its page and a fix that works, and one asset never
takes a run down: an asset name of 250 characters, ``.croft/logs`` replaced by a file (by hand and under
the scheduler), a warehouse cut short. Real ``croft`` processes on real files."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from enginekit import table
from schedulekit import env_at, schedule_on, wait_for_runs

pytestmark = pytest.mark.processes

T0 = "2026-06-01T09:30:00Z"
T1 = "2026-06-01T10:05:00Z"
T2 = "2026-06-01T10:06:00Z"
INGEST = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield [{"id": 1}]
"""


def croft(root: Path, now: str, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "croft", *args, "--json"],
        cwd=root,
        env=env_at(now),
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"not one envelope: {done.stdout!r} {done.stderr!r}") from None


def codes(envelope: dict[str, Any]) -> list[str]:
    return [p["code"] for p in envelope["problems"]]


def fixed(envelope: dict[str, Any], code: str, root: Path) -> None:
    """Run the problem's fix as written, in a shell."""
    found = next(p for p in envelope["problems"] if p["code"] == code)
    subprocess.run(found["fix"]["command"], shell=True, check=True, cwd=root)


def test_a_250_character_name_is_refused_and_the_other_assets_still_build(make_project) -> None:
    long = "a" * 250
    root = make_project({f"assets/{long}.py": INGEST, "assets/orders.py": INGEST})
    code, checked = croft(root, T0, "validate")
    assert code == 2 and codes(checked) == ["NAME_INVALID"], checked
    assert "250 characters long; an asset name has at most 64" in checked["problems"][0]["message"]
    assert checked["problems"][0]["suggestion"] == "a" * 64

    code, ran = croft(root, T0, "run")
    assert "INTERNAL_ERROR" not in codes(ran), ran
    assert codes(ran) == ["NAME_INVALID"] and code == 2
    assert [(r["id"]) for r in table(root, "orders")] == [1]  # the other asset was built


def test_logs_replaced_by_a_file_is_state_dir_invalid_with_a_fix_that_works(make_project) -> None:
    root = make_project({"assets/orders.py": INGEST, "assets/items.py": INGEST})
    logs = root / ".croft" / "logs"
    logs.mkdir(parents=True)
    logs.rmdir()
    logs.write_text("not a folder\n")

    code, ran = croft(root, T0, "run")
    assert codes(ran) == ["STATE_DIR_INVALID", "STATE_DIR_INVALID"], ran  # each step, none a crash
    assert code == 2
    problem = ran["problems"][0]
    assert problem["details"]["file"] == str(logs)
    assert (
        problem["fix"]["command"] == f"mv {shlex.quote(str(logs))} {shlex.quote(str(logs) + '.not-a-folder')}"
    )
    assert {s["asset"]: s["status"] for s in ran["data"]["steps"]} == {"items": "failed", "orders": "failed"}

    fixed(ran, "STATE_DIR_INVALID", root)
    assert (root / ".croft" / "logs.not-a-folder").read_text() == "not a folder\n"  # kept
    code, again = croft(root, T0, "run")
    assert code == 0, again


def test_the_scheduler_reports_logs_replaced_by_a_file_instead_of_backing_off(make_project) -> None:
    root = make_project({"assets/orders.py": INGEST}, timezone="UTC")
    code, ran = croft(root, T0, "run")
    assert code == 0, ran
    schedule_on(root, T0)
    logs = root / ".croft" / "logs"
    subprocess.run(["rm", "-rf", str(logs)], check=True)
    logs.write_text("")

    code, ticked = croft(root, T1, "tick")
    assert code == 2 and codes(ticked) == ["STATE_DIR_INVALID"], ticked  # not ok:true and a 15 min backoff
    code, shown = croft(root, T2, "status")
    broken = [p for p in shown["problems"] if "STATE_DIR_INVALID" in p["message"]]
    assert broken and broken[0]["fix"]["command"].startswith("mv "), shown

    fixed(ticked, "STATE_DIR_INVALID", root)
    code, ticked = croft(root, T2, "tick")
    assert code == 0 and [s["assets"] for s in ticked["data"]["spawned"]] == [["orders"]], ticked
    wait_for_runs(root)


def test_a_warehouse_cut_short_is_warehouse_corrupt_not_a_bug(make_project) -> None:
    root = make_project({"assets/orders.py": INGEST})
    code, ran = croft(root, T0, "run")
    assert code == 0, ran
    warehouse = root / "warehouse.sqlite"
    whole = warehouse.read_bytes()
    warehouse.write_bytes(whole[:4096] + b"\x00garbage" * 512)  # a copy cut short, then junk

    code, ran = croft(root, T0, "run")
    assert codes(ran) == ["WAREHOUSE_CORRUPT"] and code == 2, ran
    assert "not a bug in croft" in ran["problems"][0]["hint"]
    fixed(ran, "WAREHOUSE_CORRUPT", root)
    assert (root / "warehouse.sqlite.corrupt").exists()
    code, ran = croft(root, T0, "run")
    assert code == 0, ran
    assert [r["id"] for r in table(root, "orders")] == [1]
