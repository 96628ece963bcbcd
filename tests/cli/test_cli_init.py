import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from croft.cli.group import build_group


def invoke(*args, cwd=None):
    return CliRunner().invoke(build_group(), list(args))


def test_init_writes_a_working_project_and_prints_one_envelope(tmp_path):
    result = invoke("init", str(tmp_path / "p"), "--timezone", "Europe/London", "--json")
    assert result.exit_code == 0, result.output
    envelope = json.loads(result.output)
    assert envelope["ok"] is True
    assert json.loads((tmp_path / "p" / "croft.json").read_text()) == {"timezone": "Europe/London"}
    for rel in (
        "assets/example_items.py",
        "assets/example_summary.sql",
        ".env.example",
        ".gitignore",
        "lib/__init__.py",
    ):
        assert (tmp_path / "p" / rel).is_file(), rel
    assert ".env" in (tmp_path / "p" / ".gitignore").read_text().split()


def test_init_detects_the_machine_zone(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    result = invoke("init", str(tmp_path / "p"), "--json")
    assert json.loads(result.output)["data"]["timezone"] == "America/New_York"


@pytest.mark.processes
def test_init_refuses_an_existing_project_with_a_fix_that_works(tmp_path):
    invoke("init", str(tmp_path / "p"), "--timezone", "UTC")
    result = invoke("init", str(tmp_path / "p"), "--json")
    assert result.exit_code == 2
    problem = json.loads(result.output)["problems"][0]
    assert problem["code"] == "PROJECT_EXISTS" and problem["hint"]
    fix = subprocess.run(
        problem["fix"]["command"].replace("croft ", f"{sys.executable} -m croft ", 1),
        shell=True,
        capture_output=True,
        text=True,
    )
    assert fix.returncode == 0, fix.stderr  # the fix validates the existing project, which is valid


def test_init_keeps_files_that_are_already_there(tmp_path):
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "example_items.py").write_text("# mine\n")
    result = invoke("init", str(tmp_path), "--timezone", "UTC", "--json")
    data = json.loads(result.output)["data"]
    assert "assets/example_items.py" in data["kept"]
    assert Path(tmp_path / "assets" / "example_items.py").read_text() == "# mine\n"


def test_the_new_project_runs_offline_at_once(tmp_path):
    from enginekit import croft

    invoke("init", str(tmp_path / "p"), "--timezone", "UTC")
    code, out = croft(tmp_path / "p", "run")
    assert code == 0, out
    assert [(s["asset"], s["status"]) for s in out["data"]["steps"]] == [
        ("example_items", "ok"),
        ("example_summary", "ok"),
    ]
    code, valid = croft(tmp_path / "p", "validate")
    assert code == 0 and valid["data"]["assets"][0]["schedule"]["cron"] == "0 * * * *"
