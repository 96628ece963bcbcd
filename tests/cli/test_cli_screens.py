"""Every human screen of one small world, on a fake clock, read by a person in two zones.

The world: an hourly-ish ingest behind a real local HTTP server that fails once (500) and then answers,
and a SQL transform over it; one run by hand and one scheduled run, each with a failed first attempt.
Each screen is checked for what issue 21 promises (no machine instant with seconds, relative ages, the
trigger and attempt lines right, each hint said once) and compared with its golden file under
``tests/cli/goldens/<zone>/``, so a change of wording is a reviewed diff. Regenerate them with::

    CROFT_UPDATE_GOLDENS=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/cli/test_cli_screens.py

then read ``git diff tests/cli/goldens`` before committing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from schedulekit import croft_json, env_at, wait_for_runs

pytestmark = pytest.mark.processes

GOLDENS = Path(__file__).parent / "goldens"
UPDATE = os.environ.get("CROFT_UPDATE_GOLDENS") == "1"
ZONES = ("Europe/London", "America/New_York")  # the project's own zone, and a reader five hours behind
MACHINE_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
NOW = "2026-12-01T08:06:30Z"  # a Tuesday

ITEMS = """
from croft import ingest


@ingest(schedule="every 5 minutes", key="id", retries=1)
def items(ctx):
    return ctx.http.get("{url}", retries=0).json()
"""
TOTALS = """
-- key: id
SELECT id, n * 10 AS m FROM items
"""


def _world(make_project: Any, server: Any) -> Path:
    calls = {"n": 0}

    def flaky(*_: Any) -> tuple[int, dict[str, str], Any]:
        calls["n"] += 1
        if calls["n"] % 2:
            return 500, {}, {"error": "try again"}
        return 200, {}, [{"id": 1, "n": calls["n"]}]

    server.route("GET", "/items", flaky)
    root = make_project(
        {"assets/items.py": ITEMS.format(url=server.url("/items")), "assets/item_totals.sql": TOTALS}
    )
    code, env = croft_json(root, "2026-12-01T08:00:00Z", "schedule", "on", "--no-os-job")
    assert code == 0, env
    code, env = croft_json(root, "2026-12-01T08:03:00Z", "run")
    assert code == 0, env
    code, env = croft_json(root, "2026-12-01T08:05:10Z", "tick")
    assert code == 0 and env["data"]["spawned"], env
    wait_for_runs(root)
    code, env = croft_json(root, "2026-12-01T08:06:10Z", "tick")
    assert code == 0, env
    return root


def _screen(root: Path, zone: str, *args: str, now: str = NOW) -> tuple[int, str]:
    out = subprocess.run(
        [sys.executable, "-m", "croft", *args],
        cwd=root,
        env={**env_at(now), "TZ": zone, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, out.stdout + out.stderr


def _normal(text: str, root: Path) -> str:
    """What differs from one run of the suite to the next: paths, run ids, milliseconds, the server port."""
    text = text.replace(str(root), "<project>").replace(os.environ["CROFT_HOME"], "<home>")
    text = re.sub(r"\br_(\d{4}_\d{4})_[0-9a-z]{4}\b", r"r_\1_xxxx", text)
    text = re.sub(r"\(\d+ ms\)", "(N ms)", text)
    text = re.sub(r"took [\d.]+ (ms|s)", "took N", text)
    text = re.sub(r"First tick arrived after [\d.]+ s", "First tick arrived after N s", text)
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)


def _check(name: str, zone: str, text: str) -> None:
    assert not MACHINE_INSTANT.search(text), f"{name}: a machine instant in human output:\n{text}"
    for line in text.splitlines():  # each hint said once: no command repeated within one line
        for command in re.findall(r"croft [a-z]+(?: [a-z_]+)?", line):
            assert line.count(command) == 1 or command in ("croft run", "croft logs"), (name, line)
    golden = GOLDENS / zone.replace("/", "_") / f"{name}.txt"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
        return
    assert golden.is_file(), f"no golden {golden}: run with CROFT_UPDATE_GOLDENS=1 and review the diff"
    assert text == golden.read_text(), f"{name} in {zone} differs from {golden} (CROFT_UPDATE_GOLDENS=1)"


@pytest.mark.parametrize("zone", ZONES)
def test_every_screen_reads_in_the_readers_zone(make_project: Any, server: Any, zone: str) -> None:
    root = _world(make_project, server)
    _, env = croft_json(root, NOW, "logs", "--runs")
    scheduled = next(r["runId"] for r in env["data"]["runs"] if r["trigger"] == "schedule")
    screens: dict[str, tuple[int, str]] = {
        "status": _screen(root, zone, "status"),
        "schedule-status": _screen(root, zone, "schedule", "status"),
        "logs": _screen(root, zone, "logs"),
        "logs-runs": _screen(root, zone, "logs", "--runs"),
        "logs-run-id": _screen(root, zone, "logs", scheduled),
        "doctor": _screen(root, zone, "doctor"),
        "schedule-pause": _screen(root, zone, "schedule", "pause", "--for", "30m"),
        "schedule-on": _screen(root, zone, "schedule", "on", "--no-os-job"),
        "schedule-off": _screen(root, zone, "schedule", "off"),
    }
    texts = {name: _normal(text, root) for name, (_, text) in screens.items()}
    for name, text in texts.items():
        if name == "doctor":  # the machine's own chain (its cron, its systemd): checked, not golden
            assert not MACHINE_INSTANT.search(text), text
            continue
        _check(name, zone, text)
    away = zone != "Europe/London"
    # the zone is named once where it is not the project's, and never where it is
    for name in ("status", "schedule-status"):
        assert (f"times in {zone}" in texts[name]) is away, texts[name]
    # relative ages where a person acts on them
    assert re.search(r"last tick \d\d:\d\d \(just now\)", texts["status"]), texts["status"]
    assert re.search(r"next \d\d:\d\d \(in 4 min\)", texts["status"]), texts["status"]
    assert re.search(r"Last tick: \d\d:\d\d \(just now\)", texts["schedule-status"])
    assert re.search(r"until \d\d:\d\d \(in 30 min\)", texts["schedule-pause"]), texts["schedule-pause"]
    # the clock is the reader's: 08:05 UTC is 08:05 in London and 03:05 in New York
    local = "03:05" if away else "08:05"
    assert f"{local}  items  ok (attempt 2)" in texts["logs"], texts["logs"]
    # the trigger: a scheduled run's steps are never "by hand", in both views
    run_view = texts["logs-run-id"]
    assert run_view.startswith("run r_") and "(scheduled): succeeded" in run_view.splitlines()[0]
    assert "by hand" not in run_view and "manual" not in run_view
    assert "scheduled: items, item_totals" in texts["logs-runs"]
    assert "by hand: croft run" in texts["logs-runs"] and "--run-id" not in texts["logs-runs"]
    # each attempt shows its own lines only: the failed first attempt never says what the second did
    failed = run_view.split("items  failed")[1].split("\n0")[0].split("items  ok")[0]
    assert "-> 500" in failed and "-> 200" not in failed and "wrote:" not in failed, run_view
    assert "fetching (first run" not in texts["logs"] and "1 requests" not in texts["logs"]
    assert "1 row from 1 request; written" in texts["logs"]
    # schedule off says what became of the OS job (none here: serve ticks this project)
    assert "Scheduling is off" in texts["schedule-off"]
