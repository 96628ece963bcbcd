"""``croft --version``, the plain forms of ``croft status`` and the run a tick starts print exactly what
the click command prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from enginekit import croft

from croft import __version__
from croft.cli.main import _build_group

pytestmark = pytest.mark.processes

PROBE = """
import contextlib, io, json, sys
args = json.loads(sys.argv[1])
sys.argv = ["croft", *args]
from croft.cli.main import main
out = io.StringIO()
code = 0
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as exc:
        code = exc.code or 0
print(json.dumps({"code": code, "out": out.getvalue()}))
"""


def _probe(root: Path, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))], cwd=root, capture_output=True, text=True,
        env={**os.environ, "CROFT_NOW": "2026-06-01T10:00:00Z"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _clicked(root: Path, *args: str) -> tuple[int, str]:
    old = Path.cwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(_build_group(), list(args), env={"CROFT_NOW": "2026-06-01T10:00:00Z"})
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout


INGEST = 'from croft import ingest\n\n\n@ingest(schedule="daily at 03:00", key="id")\ndef rows(ctx):\n    yield {"id": 1}\n'


def test_version_is_clicks_words(tmp_path: Path) -> None:
    fast = _probe(tmp_path, "--version")
    assert fast == {"code": 0, "out": f"croft, version {__version__}\n"}
    assert _clicked(tmp_path, "--version") == (0, fast["out"])  # what click's version option says


def test_status_prints_what_the_click_command_prints(make_project) -> None:
    root = make_project({"assets/rows.py": INGEST})
    assert croft(root, "run", env={"CROFT_NOW": "2026-06-01T09:00:00Z"})[0] == 0
    for args in (["status"], ["status", "--json"], ["status", "--project", str(root), "--json"]):
        fast = _probe(root, *args)
        assert (fast["code"], fast["out"]) == _clicked(root, *args), args
    assert json.loads(_probe(root, "status", "--json")["out"])["data"]["assets"][0]["asset"] == "rows"


def test_status_with_anything_else_goes_through_click(make_project, tmp_path: Path) -> None:
    root = make_project({"assets/rows.py": INGEST})
    helped = _probe(root, "status", "--help")
    assert helped["code"] == 0 and "Usage:" in helped["out"]
    missing = _probe(root, "status", "--project", str(tmp_path / "nowhere"), "--json")
    assert missing["code"] == 2 and json.loads(missing["out"])["problems"][0]["code"] == "USAGE"


def test_a_quiet_project_still_gets_the_chain_s_words(make_project) -> None:
    """Scheduling on and no tick for an hour: the stale warning says why."""
    root = make_project({"assets/rows.py": INGEST})
    assert croft(root, "run", env={"CROFT_NOW": "2026-06-01T09:00:00Z"})[0] == 0
    assert croft(root, "schedule", "on", "--no-os-job", env={"CROFT_NOW": "2026-06-01T08:00:00Z"})[0] == 0
    quiet = _probe(root, "status", "--json")
    stale = [p for p in json.loads(quiet["out"])["problems"] if p["code"] == "SCHEDULER_STALE"]
    assert stale and stale[0]["details"]["cause"]


def test_a_scheduled_run_as_the_tick_starts_it_records_its_argv(make_project) -> None:
    from enginekit import history

    root = make_project({"assets/rows.py": INGEST})
    assert croft(root, "run", env={"CROFT_NOW": "2026-06-01T09:00:00Z"})[0] == 0  # by hand: approved
    assert croft(root, "schedule", "on", "--no-os-job", env={"CROFT_NOW": "2026-06-01T09:01:00Z"})[0] == 0
    argv = ["run", "--due", "--json", "--run-id", "r_0601_1100_fast", "rows"]
    fast = _probe(root, *argv)
    envelope = json.loads(fast["out"])
    assert fast["code"] == 0 and envelope["data"]["runId"] == "r_0601_1100_fast"
    assert [s["asset"] for s in envelope["data"]["steps"]] == ["rows"]
    [run] = history(root, "SELECT argv, trigger, human FROM runs WHERE id = 'r_0601_1100_fast'")
    assert json.loads(run["argv"]) == argv and run["trigger"] == "schedule" and run["human"] == 0
    odd = _probe(root, "run", "--due", "--only", "rows", "--json")  # not what a tick starts: click decides
    assert odd["code"] == 2 and json.loads(odd["out"])["problems"][0]["code"] == "USAGE"
