"""Every command's arguments are click's: ``--help`` is click's help, a bad argument is the USAGE problem
(one envelope under ``--json``, the problem lines on stderr otherwise) with a hint naming the command's
``--help``, and the OS job's ``croft tick --all`` asks the minute gate before click is imported."""

from __future__ import annotations

import json
from typing import Any

import pytest

import croft.scheduler.user.gate as gate
from croft import __version__
from croft.cli.main import main


def _croft(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


@pytest.mark.parametrize(
    ("args", "options"),
    [
        (["tick"], ["--all", "--log-as NAME", "--project DIRECTORY", "--json"]),
        (["run"], ["--due", "--only", "--wait", "--project DIRECTORY", "--json"]),
        (["status"], ["--project DIRECTORY", "--json"]),
    ],
)
def test_help_is_clicks_and_lists_every_option(
    capsys: pytest.CaptureFixture[str], args: list[str], options: list[str]
) -> None:
    code, out, _ = _croft(capsys, *args, "--help")
    assert code == 0 and out.startswith(f"Usage: croft {args[0]} [OPTIONS]")
    assert all(option in out for option in options), out
    assert "--batch" not in out and "--run-id" not in out  # what croft's own children take stays hidden


def test_version_is_clicks_version_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert _croft(capsys, "--version") == (0, f"croft, version {__version__}\n", "")


BAD = [
    (["tick", "--bogus"], "No such option '--bogus'", "croft tick --help"),
    (["tick", "--all", "--project", "."], "--all does not go with --project", "croft tick --help"),
    (["tick", "--all", "--batch"], "--all does not go with --batch", "croft tick --help"),
    (["tick", "--batch", "--json"], "--batch does not go with --json", "croft tick --help"),
    (["run", "--due", "--bogus"], "No such option '--bogus'", "croft run --help"),
    (["run", "--due", "--project", "/no/such/folder"], "does not exist", "croft run --help"),
    (["status", "--bogus"], "No such option '--bogus'", "croft status --help"),
]


@pytest.mark.parametrize(("args", "message", "hint"), BAD)
def test_a_bad_argument_is_the_usage_problem_in_one_envelope(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str, hint: str
) -> None:
    code, out, err = _croft(capsys, *args, "--json")
    envelope = json.loads(out)  # exactly one JSON object on stdout
    [problem] = envelope["problems"]
    assert code == 2 and envelope["ok"] is False and err == ""
    assert problem["code"] == "USAGE" and message in problem["message"] and hint in problem["hint"]


@pytest.mark.parametrize(("args", "message", "hint"), [b for b in BAD if "--json" not in b[1]])
def test_a_bad_argument_is_told_on_stderr_with_its_hint(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str, hint: str
) -> None:
    code, out, err = _croft(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("error: USAGE: ") and message in err and f"hint: `{hint}`" in err


def test_only_the_os_jobs_exact_command_asks_the_gate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Any] = []
    monkeypatch.setattr(gate, "enter", lambda: asked.append(1) or "")  # settled, no ping owed
    assert _croft(capsys, "tick", "--all") == (0, "", "")  # the gate answered the minute
    assert asked == [1]
    assert _croft(capsys, "tick", "--all", "--bogus")[0] == 2  # not the OS job's command: click answers
    assert asked == [1]
