"""The one table of child environments: each kind of child gets exactly its names, nothing else."""

from __future__ import annotations

import os
import sys

from croft.core.children import ENV_TABLE, child_env, croft_env

SHELL = {
    "PATH": "/opt/bin:/usr/bin",
    "HOME": "/home/u",
    "LANG": "de_DE.UTF-8",
    "TZ": "Europe/Berlin",
    "HTTPS_PROXY": "http://proxy:3128",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "DISPLAY": ":0",
    "CROFT_LEASE_WAIT_MS": "100",
    "CROFT_HOME": "/h/.croft",
    "API_KEY": "s3cret",
    "EMPTY": "",
}


def test_a_croft_child_gets_every_knob_proxies_and_the_session_but_no_stranger() -> None:
    env = croft_env(SHELL)
    assert env["CROFT_LEASE_WAIT_MS"] == "100" and env["HTTPS_PROXY"] == "http://proxy:3128"
    assert env["TZ"] == "Europe/Berlin" and env["DISPLAY"] == ":0" and env["LANG"] == "de_DE.UTF-8"
    assert "API_KEY" not in env and "EMPTY" not in env
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert env["PYTHONUNBUFFERED"] == "1"


def test_a_croft_child_can_have_croft_home_pinned_and_names_dropped() -> None:
    env = croft_env(SHELL, croft_home="/elsewhere", drop=["TZ"])
    assert env["CROFT_HOME"] == "/elsewhere" and "TZ" not in env


def test_an_os_program_gets_the_session_in_the_c_locale_and_no_knob() -> None:
    env = child_env("program", SHELL)
    assert env == {
        "PATH": "/opt/bin:/usr/bin",
        "HOME": "/home/u",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "LC_ALL": "C",
    }


def test_the_interpreter_probe_is_as_bare_as_cron() -> None:
    assert child_env("probe", SHELL) == {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def test_the_os_job_carries_croft_home_only() -> None:
    assert child_env("job", SHELL) == {"CROFT_HOME": "/h/.croft"}


def test_every_name_in_the_table_goes_to_some_known_kind() -> None:
    kinds = {"croft", "program", "notifier", "probe", "job"}
    assert all(given and given <= kinds for given in ENV_TABLE.values())
