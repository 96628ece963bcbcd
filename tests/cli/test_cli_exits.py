"""Every non-zero exit of every command carries at least one problem (with `--json`, an error in the
envelope; without, a problem line on stderr): a walk over each command in a few broken worlds.
`croft doctor` once exited 1 with `problems: []` when job.json was corrupted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from projectkit import one_ingest

from croft.cli.group import COMMANDS

pytestmark = pytest.mark.processes

# The commands that only look come first, so each meets the world as it was broken; those that change it
# (a run, the setting, the registry) come last.
ARGVS = [
    ["doctor"],
    ["status"],
    ["context"],
    ["mcp", "--check"],
    ["schedule", "status"],
    ["metrics"],
    ["logs"],
    ["validate"],
    ["schedule", "explain", "hourly"],
    ["docs", "DISK_FULL"],
    ["notify", "test"],
    ["tick"],
    ["tick", "--all"],
    ["preview", "items"],
    ["run", "--due", "items"],
    ["run"],
    ["init", "fresh"],
    ["schedule", "pause", "--for", "1h"],
    ["schedule", "on", "--no-os-job"],
    ["schedule", "off"],
]


def test_the_walk_covers_every_command():
    # serve and ui would run on: each is walked in a world where it refuses (below)
    assert {argv[0] for argv in ARGVS} | {"serve", "ui"} == set(COMMANDS)


def _project(tmp: Path) -> Path:
    return one_ingest(tmp / "proj", "items")


def outside(tmp: Path, home: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp / "nowhere"
    folder.mkdir()
    return folder, {}


def broken_history(tmp: Path, home: Path) -> tuple[Path, dict[str, str]]:
    root = _project(tmp)
    subprocess.run([sys.executable, "-m", "croft", "run"], cwd=root, capture_output=True, check=True)
    (root / ".croft" / "runs.sqlite").write_bytes(os.urandom(4096))
    return root, {}


def broken_job_record(tmp: Path, home: Path) -> tuple[Path, dict[str, str]]:
    from croft.core.clock import parse_instant
    from croft.history.db import open_history
    from croft.scheduler.setting import write_scheduling
    from croft.scheduler.user.registry import Registry

    root = _project(tmp)
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", parse_instant("2026-03-01T12:00:00Z"), via="os-job")
    conn.close()
    Registry(home).add(root, "os-job", parse_instant("2026-03-01T12:00:00Z"))
    (home / "job.json").write_bytes(b"\x00{garbage")
    # the job's backends are looked for on a PATH without crontab or systemctl: nothing outside is read
    return root, {"PATH": str(Path(sys.executable).parent)}


def broken_registry(tmp: Path, home: Path) -> tuple[Path, dict[str, str]]:
    root = _project(tmp)
    (home / "projects.json").write_text("[{")
    return root, {}


def bad_knob(tmp: Path, home: Path) -> tuple[Path, dict[str, str]]:
    return _project(tmp), {"CROFT_RETRY_DELAYS": "soon", "CROFT_SERVE_INTERVAL_MS": "0"}


@pytest.mark.parametrize("world", [outside, broken_history, broken_job_record, broken_registry, bad_knob])
def test_every_non_zero_exit_says_why(world, tmp_path: Path, _croft_home: Path):
    cwd, extra = world(tmp_path, _croft_home)
    argvs = [*ARGVS, ["serve"]] if world is bad_knob else ARGVS  # serve would run on: only where it refuses
    if world is outside:
        argvs = [*argvs, ["ui", "--no-open"]]  # as would ui: outside a project it refuses
    failed = 0
    for argv in argvs:
        env = {**os.environ, **extra}
        done = subprocess.run(
            [sys.executable, "-m", "croft", *argv, "--json"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in done.stderr, (argv, done.stderr)
        envelope = json.loads(done.stdout)
        if done.returncode != 0:
            failed += 1
            errors = [p for p in envelope["problems"] if p["severity"] == "error"]
            assert errors, (world.__name__, argv, done.returncode, envelope)
            assert "INTERNAL_ERROR" not in {p["code"] for p in errors}, (world.__name__, argv, errors)
            plain = subprocess.run(
                [sys.executable, "-m", "croft", *argv],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert plain.returncode == done.returncode and "error: " in plain.stderr, (argv, plain.stderr)
    assert failed, f"the {world.__name__} world broke nothing"
