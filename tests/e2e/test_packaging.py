"""The wheel carries docs/, launchd/ and systemd/, so an installed croft can print guides and write its job."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_docs_and_job_templates(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("croft-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in (
        "docs/scheduling.md",
        "docs/commands.md",
        "docs/errors/SCHEDULE_HELD.md",
        "docs/server/Dockerfile",
        "docs/server/croft-tick-cronjob.yaml",
        "launchd/dev.croft.tick.plist",
        "systemd/croft-tick.timer",
    ):
        assert f"croft/_data/{rel}" in names, rel
    assert "croft/__init__.py" in names and not any(n.startswith("tests/") for n in names)


def test_the_public_face_is_only_the_decorators():
    import croft

    assert croft.__all__ == sorted(croft.__all__) == ["ingest", "transform"]
