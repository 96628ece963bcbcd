"""`croft schedule explain`: the cron, the next fires in the schedule's zone, and DST notes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from croft.cli.group import build_group


def invoke(*args: str):
    return CliRunner().invoke(build_group(), ["schedule", "explain", *args])


def test_json_data_is_text_cron_timezone_and_fires_with_the_zones_offset():
    result = invoke(
        "daily at 02:30", "--tz", "America/Los_Angeles", "--after", "2026-03-07T00:00:00Z", "--json"
    )
    assert result.exit_code == 0, result.output
    envelope = json.loads(result.output)
    assert envelope == {
        "ok": True,
        "data": {
            "text": "daily at 02:30",
            "cron": "30 2 * * *",
            "timezone": "America/Los_Angeles",
            "fires": ["2026-03-07T02:30:00-08:00", "2026-03-08T03:00:00-07:00", "2026-03-09T02:30:00-07:00"],
        },
        "problems": [],
        "next": [],
    }


def test_human_output_shows_each_fire_with_offset_weekday_and_the_gap_note():
    result = invoke("30 2 * * *", "--tz", "America/Los_Angeles", "--after", "2026-03-07T00:00:00Z")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "30 2 * * *",
        "  cron: 30 2 * * *",
        "  zone: America/Los_Angeles",
        "  next 3 fires:",
        "    Sat 2026-03-07 02:30 -08:00",
        "    Sun 2026-03-08 03:00 -07:00   02:30 does not exist on 2026-03-08; fires at 03:00",
        "    Mon 2026-03-09 02:30 -07:00",
    ]


def test_human_output_says_a_repeated_time_fires_at_the_first_pass():
    result = invoke("30 1 * * *", "--tz", "America/Los_Angeles", "--after", "2026-10-31T12:00:00Z", "-n", "2")
    assert "    Sun 2026-11-01 01:30 -07:00   01:30 happens twice on 2026-11-01; fires at the first" in (
        result.output.splitlines()
    )


def test_words_of_an_unquoted_phrase_are_joined():
    result = invoke(
        "every", "15", "minutes", "--tz", "UTC", "--after", "2026-05-01T10:07:00Z", "-n", "2", "--json"
    )
    data = json.loads(result.output)["data"]
    assert data["text"] == "every 15 minutes"
    assert data["fires"] == ["2026-05-01T10:15:00+00:00", "2026-05-01T10:30:00+00:00"]


def test_after_defaults_to_now_which_honours_croft_now(monkeypatch):
    monkeypatch.setenv("CROFT_NOW", "2026-05-01T10:00:00Z")
    result = invoke("every hour", "--tz", "UTC", "-n", "1", "--json")
    assert json.loads(result.output)["data"]["fires"] == ["2026-05-01T11:00:00+00:00"]


def test_zone_defaults_to_the_projects_zone_inside_a_project(tmp_path, monkeypatch):
    (tmp_path / "croft.json").write_text(json.dumps({"timezone": "Asia/Kolkata"}))
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "deep").mkdir()
    monkeypatch.chdir(tmp_path / "assets" / "deep")
    result = invoke("daily at 09:00", "--after", "2026-05-01T00:00:00Z", "-n", "1", "--json")
    data = json.loads(result.output)["data"]
    assert data["timezone"] == "Asia/Kolkata"
    assert data["fires"] == ["2026-05-01T09:00:00+05:30"]


def test_zone_defaults_to_utc_outside_a_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("daily at 09:00", "--after", "2026-05-01T00:00:00Z", "-n", "1", "--json")
    assert json.loads(result.output)["data"]["timezone"] == "UTC"


def test_an_invalid_schedule_is_refused_with_exit_2_and_a_suggestion_that_parses():
    result = invoke("every 7 minutes", "--tz", "UTC", "--json")
    assert result.exit_code == 2
    envelope = json.loads(result.output)
    assert envelope["ok"] is False
    [problem] = envelope["problems"]
    assert problem["code"] == "SCHEDULE_INVALID"
    assert problem["suggestion"] == "every 6 minutes"
    assert invoke(problem["suggestion"], "--tz", "UTC", "--json").exit_code == 0


def test_an_impossible_cron_has_no_suggestion():
    result = invoke("0 0 30 2 *", "--tz", "UTC", "--json")
    assert result.exit_code == 2
    [problem] = json.loads(result.output)["problems"]
    assert "suggestion" not in problem
    assert problem["message"] == 'schedule "0 0 30 2 *" never fires: February has no day 30'


def test_an_unknown_zone_is_config_invalid_with_did_you_mean():
    result = invoke("every hour", "--tz", "Europe/Londn", "--json")
    assert result.exit_code == 2
    [problem] = json.loads(result.output)["problems"]
    assert problem["code"] == "CONFIG_INVALID"
    assert problem["suggestion"] == "Europe/London"


@pytest.mark.parametrize("args", [("--after", "yesterday"), ("-n", "0")])
def test_bad_options_are_usage_errors_in_the_envelope(args):
    result = invoke("every hour", "--tz", "UTC", *args, "--json")
    assert result.exit_code == 2
    assert json.loads(result.output)["problems"][0]["code"] == "USAGE"


def test_schedule_help_lists_its_actions():
    result = CliRunner().invoke(build_group(), ["schedule", "--help"])
    assert result.exit_code == 0
    assert all(word in result.output for word in ("explain", "on", "off", "pause", "status"))


def test_bare_schedule_is_status_and_outside_a_project_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(build_group(), ["schedule", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.output)["problems"][0]["code"] == "NOT_A_PROJECT"
