"""jitter= and quiet= on an ingest, croft.json's jitter and quiet: read without running anything, each
through the one rule (``rules``), a bad value refused with the option named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from croft.core.problems import CroftError
from croft.project.config import load_config
from croft.project.facts import read_python_facts
from croft.project.sqlfacts import read_sql_facts

INGEST = """from croft import ingest


@ingest(schedule="every hour", key="id", {options})
def rows(ctx):
    yield []
"""


def _facts(tmp_path: Path, options: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "orders.py"
    path.write_text(INGEST.format(options=options))
    return read_python_facts(path, "orders", "assets/orders.py")


def test_an_ingest_reads_its_own_jitter_and_quiet_hours(tmp_path: Path) -> None:
    facts = _facts(tmp_path, 'jitter="5m", quiet=["22:00-06:00"]')
    assert facts.ok and facts.jitter_s == 300 and facts.quiet == ("22:00-06:00",)
    assert _facts(tmp_path, "quiet=[]").quiet == ()  # none: out of the project's quiet hours


@pytest.mark.parametrize(
    ("options", "words"),
    [('jitter="soon"', "jitter= is not a duration"), ('quiet=["10pm-6am"]', "quiet= has '10pm-6am'")],
)
def test_a_bad_value_is_refused_with_its_option(tmp_path: Path, options: str, words: str) -> None:
    facts = _facts(tmp_path, options)
    [found] = facts.problems
    assert found.code == "ASSET_INVALID" and words in found.message


def test_croft_json_gives_every_ingest_its_jitter_and_quiet_hours(tmp_path: Path) -> None:
    (tmp_path / "croft.json").write_text(
        json.dumps({"timezone": "UTC", "jitter": "2m", "quiet": ["01:00-05:00"]})
    )
    config = load_config(tmp_path)
    assert config.jitter_s == 120 and config.quiet == ("01:00-05:00",)
    (tmp_path / "croft.json").write_text(json.dumps({"timezone": "UTC", "quiet": ["01:00-01:00"]}))
    with pytest.raises(CroftError) as caught:
        load_config(tmp_path)
    assert caught.value.code == "CONFIG_INVALID" and "starts where it ends" in caught.value.problem.message


def test_a_sql_asset_is_told_it_has_no_schedule_to_jitter(tmp_path: Path) -> None:
    path = tmp_path / "daily.sql"
    path.write_text("-- jitter: 5m\nSELECT 1 AS id\n")
    [found] = read_sql_facts(path, "daily", "assets/daily.sql").problems
    assert found.code == "ASSET_INVALID" and "no schedule of its own" in found.message
