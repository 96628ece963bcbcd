"""croft.json, the project root and .env: what is accepted, and how each refusal names the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from croft.core.problems import CroftError
from croft.project.config import find_root, load_config, load_project
from croft.project.env import parse_dotenv
from croft.scheduler.tick import memo


def config_error(root: Path) -> CroftError:
    with pytest.raises(CroftError) as caught:
        load_config(root)
    return caught.value


def test_a_zone_alone_is_a_complete_config(make_project):
    root = make_project(timezone="Europe/London")
    config = load_config(root)
    assert config.timezone == "Europe/London"
    assert config.database == root / "warehouse.sqlite"
    assert config.state_dir == root / ".croft"
    assert config.notify_desktop is True
    assert (config.notify_webhook, config.notify_ping, config.notify_secret) == (None, None, None)


def test_optional_keys_are_read_and_paths_made_absolute(make_project):
    root = make_project(
        database="data/wh.sqlite",
        stateDir="../state",
        notify={"desktop": False, "webhook": "https://hooks.example/x", "ping": "http://ping.example/1",
                "secret": "s3cret"},
    )  # fmt: skip
    config = load_config(root)
    assert config.database == root / "data" / "wh.sqlite"
    assert config.state_dir == root / "../state"
    assert config.database.is_absolute() and config.state_dir.is_absolute()
    assert config.notify_desktop is False
    assert config.notify_webhook == "https://hooks.example/x"
    assert config.notify_ping == "http://ping.example/1"
    assert config.notify_secret == "s3cret"


def test_missing_zone_is_config_invalid_naming_file_and_key(make_project):
    root = make_project(timezone=None)
    err = config_error(root)
    assert err.code == "CONFIG_INVALID"
    assert err.problem.details == {"file": str(root / "croft.json"), "key": "timezone"}
    assert err.problem.file == str(root / "croft.json")
    assert "timezone" in err.problem.message and "Europe/London" in err.problem.hint


def test_misspelt_zone_is_refused_with_the_real_zone_suggested(make_project):
    err = config_error(make_project(timezone="Europe/Londn"))
    assert err.code == "CONFIG_INVALID"
    assert err.problem.details["key"] == "timezone"
    assert "Europe/Londn" in err.problem.message
    assert err.problem.suggestion == "Europe/London"
    assert "Europe/London" in err.problem.hint


@pytest.mark.parametrize(
    ("zone", "suggestion"),
    [
        pytest.param("europe/london", "Europe/London", id="wrong-case"),
        pytest.param("America/New York", "America/New_York", id="space-for-underscore"),
        pytest.param("Mars/Olympus_Mons", None, id="no-close-zone"),
        pytest.param("", None, id="empty"),
        pytest.param(3, None, id="not-a-string"),
        pytest.param("../etc/passwd", None, id="a-path"),
    ],
)
def test_bad_zones_are_refused(make_project, zone, suggestion):
    err = config_error(make_project(timezone=zone))
    assert err.code == "CONFIG_INVALID"
    assert err.problem.details["key"] == "timezone"
    assert err.problem.suggestion == suggestion


def test_unknown_key_is_refused_with_did_you_mean(make_project):
    root = make_project()
    (root / "croft.json").write_text('{"timezone": "UTC", "datbase": "x.sqlite"}')
    err = config_error(root)
    assert err.code == "CONFIG_INVALID"
    assert err.problem.details["key"] == "datbase"
    assert err.problem.suggestion == "database"
    assert 'did you mean "database"' in err.problem.hint


def test_unknown_key_in_another_spelling_style_is_matched(make_project):
    err = config_error(make_project(state_dir=".state"))
    assert err.problem.suggestion == "stateDir"


def test_unknown_notify_key_names_the_nested_key(make_project):
    err = config_error(make_project(notify={"webhok": "https://x.example"}))
    assert err.problem.details["key"] == "notify.webhok"
    assert err.problem.suggestion == "notify.webhook"


def test_bad_json_is_config_invalid_with_the_line(make_project):
    root = make_project()
    (root / "croft.json").write_text('{\n  "timezone": "UTC",\n}\n')
    err = config_error(root)
    assert err.code == "CONFIG_INVALID"
    assert err.problem.line == 3
    assert "not valid JSON" in err.problem.message
    assert "trailing commas" in err.problem.hint


def test_a_json_list_is_not_a_config(make_project):
    root = make_project()
    (root / "croft.json").write_text('["UTC"]')
    err = config_error(root)
    assert err.code == "CONFIG_INVALID" and '{"timezone"' in err.problem.hint


@pytest.mark.parametrize(
    ("config", "key"),
    [
        pytest.param({"database": ""}, "database", id="empty-database"),
        pytest.param({"notify": {"desktop": "yes"}}, "notify.desktop", id="desktop-not-bool"),
        pytest.param({"notify": {"webhook": "ftp://x"}}, "notify.webhook", id="webhook-not-http"),
        pytest.param({"notify": {"ping": 5}}, "notify.ping", id="ping-not-url"),
        pytest.param({"notify": []}, "notify", id="notify-not-object"),
    ],
)
def test_wrongly_typed_values_name_their_key(make_project, config, key):
    err = config_error(make_project(**config))
    assert err.code == "CONFIG_INVALID"
    assert err.problem.details["key"] == key


def test_every_problem_is_reported_at_once(make_project):
    root = make_project(timezone="Mars/Olympus", colour="red")
    err = config_error(root)
    keys = {p.details["key"] for p in [err.problem, *err.extra]}
    assert keys == {"timezone", "colour"}


def test_root_is_found_from_a_nested_folder(make_project):
    root = make_project()
    nested = root / "assets" / "deep" / "er"
    nested.mkdir(parents=True)
    assert find_root(nested) == root.resolve()


def test_outside_a_project_is_not_a_project_pointing_at_init(tmp_path):
    with pytest.raises(CroftError) as caught:
        find_root(tmp_path)
    assert caught.value.code == "NOT_A_PROJECT"
    assert "croft init" in caught.value.problem.hint


def test_shell_wins_over_dotenv_and_only_dotenv_values_are_redacted(make_project, monkeypatch):
    root = make_project()
    (root / ".env").write_text("API_KEY=from-file-1234\nexport TOKEN='tok en 5678'\nSHORT=abc\n")
    monkeypatch.setenv("API_KEY", "from-shell-9999")
    monkeypatch.setenv("UNRELATED", "do-not-touch")
    project = load_project(root)
    assert project.env == {"API_KEY": "from-shell-9999", "TOKEN": "tok en 5678", "SHORT": "abc"}
    text = project.redactor.text("key=from-shell-9999 token=tok en 5678 short=abc other=do-not-touch")
    assert text == "key=[redacted:API_KEY] token=[redacted:TOKEN] short=abc other=do-not-touch"


def test_a_failed_pings_line_is_redacted_even_when_croft_json_does_not_load(make_project, monkeypatch):
    """The OS job's interpreter may lack a time zone (no system tzdata, no site-packages) or croft.json
    may be broken: the redactor of a missed ping's notify.log line comes from .env alone, as the
    project's own does."""
    root = make_project()
    (root / ".env").write_text("API_KEY=from-file-1234\nTOKEN=tok-5678\n")
    monkeypatch.setenv("API_KEY", "from-shell-9999")
    text = "key=from-shell-9999 token=tok-5678 old=from-file-1234"
    expected = load_project(root).redactor.text(text)
    assert expected == "key=[redacted:API_KEY] token=[redacted:TOKEN] old=from-file-1234"
    (root / "croft.json").write_text('{"timezone": "Nowhere/Atlantis"}')
    with pytest.raises(CroftError):
        load_project(root)
    assert memo.project_redactor(str(root))(text) == expected


def test_a_project_without_dotenv_has_no_secrets(make_project):
    project = load_project(make_project())
    assert project.env == {}
    assert not project.redactor


def test_dotenv_syntax():
    text = """
    # a comment
    PLAIN=value # trailing comment
    export EXPORTED=yes
    SINGLE='keep $ and \\n literally'
    DOUBLE="line\\nbreak \\"quoted\\""
    EMPTY=
    HASH=abc#def
    not a pair
    9BAD=x
    """
    assert parse_dotenv(text) == {
        "PLAIN": "value",
        "EXPORTED": "yes",
        "SINGLE": "keep $ and \\n literally",
        "DOUBLE": 'line\nbreak "quoted"',
        "EMPTY": "",
        "HASH": "abc#def",
    }


def test_config_errors_never_echo_dotenv_values(make_project):
    root = make_project(timezone="Bad/Zone")
    (root / ".env").write_text("SECRET=hunter22\n")
    err = config_error(root)
    assert "hunter22" not in str(err.problem.to_dict())
