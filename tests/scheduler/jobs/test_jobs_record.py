"""job.json is state croft can rebuild: a record that is there but unreadable is not "no job" (the job may
well be running). The one reader asks this platform's backends for a job of the label in force, writes the
record again for the one that holds it, and says so; when none does, it says that instead."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from jobskit import FakeOS

from croft.scheduler.jobs import record
from croft.scheduler.jobs.crontab import Crontab
from croft.scheduler.jobs.spec import JobSpec

pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="the crontab backend is Linux's here")


def _installed(home: Path) -> FakeOS:
    fake = FakeOS()
    spec = JobSpec("dev.croft.test", "/opt/venv/bin/python3", str(home), str(home / "logs" / "tick.log"))
    Crontab(fake).install(spec)
    record.write({"backend": "crontab", "label": "dev.croft.test", "python": spec.python, "installedAt": "x"})
    return fake


@pytest.mark.parametrize(
    "damage", [b"", b"\x00\xff{not json", b"[1, 2]"], ids=["empty", "garbage", "not-an-object"]
)
def test_an_unreadable_job_record_is_rebuilt_from_the_job_itself(_croft_home: Path, damage: bytes) -> None:
    fake = _installed(_croft_home)
    (_croft_home / "job.json").write_bytes(damage)
    found = record.installed_job(fake)
    assert found.state is not None and found.state.installed and found.state.backend == "crontab"
    assert (
        found.note is not None
        and "found the crontab job dev.croft.test and wrote the record again" in found.note
    )
    rebuilt = json.loads((_croft_home / "job.json").read_text())
    assert rebuilt["backend"] == "crontab" and rebuilt["python"] == "/opt/venv/bin/python3"
    again = record.installed_job(fake)
    assert again.state is not None and again.state.installed and again.note is None  # whole again


def test_an_unreadable_job_record_with_no_job_anywhere_says_so(_croft_home: Path) -> None:
    (_croft_home / "job.json").write_bytes(b"garbage")
    found = record.installed_job(FakeOS())
    assert (
        found.state is None
        and found.note is not None
        and "no backend holds a job dev.croft.test" in found.note
    )
    assert record.installed_job(FakeOS()).note == found.note  # nothing to rebuild from: said each time
    (_croft_home / "job.json").unlink()
    assert record.installed_job(FakeOS()).note is None  # no record at all is simply no job
