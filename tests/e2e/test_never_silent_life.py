"""Never silent, part two: the ordinary events of a laptop's life, each reproduced on real files with real
``croft`` processes, and what croft now does about it.

The clock moves back; a checkout takes croft.json away for a minute; runs.sqlite is emptied or moved
aside; croft.json breaks after ``schedule on``; the group's own options; a zero wait; a full disk under
``schedule on`` and ``off``; a pause and ``off`` seen by ``schedule status``; one cause, one alert; and a
resume of a job that already ticks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from brokenkit import env, served, until_green

YEARLY = """
from croft import ingest


@ingest(schedule="0 0 1 1 *", key="id")
def rows(ctx):
    yield [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
"""


def _croft(cwd: Path, *args: str, **extra: str) -> tuple[int, str, str]:
    """A real ``croft ARGS`` (no ``--json`` added): exit code, stdout, stderr; never a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "croft", *args],
        cwd=cwd,
        env=env(**extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def _envelope(cwd: Path, *args: str, **extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = _croft(cwd, *args, **extra)
    try:
        return code, json.loads(out)
    except ValueError:
        raise AssertionError(f"croft {' '.join(args)}: not one envelope: {out!r} {err!r}") from None


# -- the group's options: --project and --json given before the action ----------------------------------


def test_the_schedule_groups_options_are_honoured_before_the_action(make_project, tmp_path):
    here = make_project(root=tmp_path / "p1")
    there = make_project(root=tmp_path / "p2")
    code, on = _envelope(here, "schedule", "--project", "../p2", "on", "--no-os-job", "--json")
    assert code == 0 and on["data"]["root"] == str(there.resolve())
    code, mine = _envelope(here, "schedule", "status", "--json")
    assert mine["data"]["scheduling"]["state"] == "off"  # the current folder's project was left alone
    code, theirs = _envelope(there, "schedule", "status", "--json")
    assert theirs["data"]["scheduling"]["state"] == "on"
    # --json on the group: every action prints one envelope, explain included
    for argv in (["explain", "every hour"], ["status"], ["pause", "--for", "1h"], ["on", "--no-os-job"]):
        code, envelope = _envelope(here, "schedule", "--json", "--project", "../p2", *argv)
        assert code == 0 and envelope["ok"], (argv, envelope)
    code, explained = _envelope(
        there.parent, "schedule", "--project", str(there), "--json", "explain", "daily at 9am"
    )
    assert explained["data"]["timezone"] == "Europe/London"  # the group's project gives the zone
    # two different folders, one on each side: refused as a usage error, nothing changed
    code, refused = _envelope(here, "schedule", "--project", "../p2", "off", "--project", ".", "--json")
    assert code == 2 and refused["problems"][0]["code"] == "USAGE"
    code, still = _envelope(there, "schedule", "status", "--json")
    assert still["data"]["scheduling"]["state"] == "on"
    code, _out, _ = _croft(here, "schedule", "--project", "../p2", "off", "--project", "../p2")
    assert code == 0
    code, after = _envelope(there, "schedule", "status", "--json")
    assert after["data"]["scheduling"]["state"] == "off"


# -- croft.json broken after `schedule on`: an error line in doctor, exit 1 ----------------------------


def test_a_croft_json_broken_after_schedule_on_is_an_error_line_in_doctor(make_project, _croft_home):
    root = make_project({"assets/orders.py": YEARLY})
    assert _croft(root, "run")[0] == 0
    assert _croft(root, "schedule", "on", "--no-os-job")[0] == 0
    with served(_croft_home):
        until_green(root)  # ticked: fresh heartbeat, no incident
    (root / "croft.json").write_text('{"timezone": ')  # a half-saved edit
    for cwd in (root, root.parent):  # in the project, and anywhere else (the registry's projects)
        code, envelope = _envelope(cwd, "doctor", "--json")
        assert code == 1 and not envelope["ok"]
        [line] = [c for c in envelope["data"]["checks"] if c["check"] == f"project {root.resolve()}"]
        assert not line["ok"] and "croft.json is not valid JSON" in line["detail"], line
        bad = [p for p in envelope["problems"] if p["code"] == "CONFIG_INVALID"]
        assert bad and bad[0]["severity"] == "error" and bad[0]["details"]["cause"] == "config_unreadable"
    (root / "croft.json").write_text(json.dumps({"timezone": "Europe/London"}))
    code, envelope = _envelope(root.parent, "doctor", "--json")
    [line] = [c for c in envelope["data"]["checks"] if c["check"] == f"project {root.resolve()}"]
    assert line["ok"], line
