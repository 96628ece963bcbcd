"""What notifications say and how they are quoted: messages, payloads, notify-send and osascript arguments,
the notifier's environment, and the streak rule. Pure functions, no processes."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from croft.core.redact import Redactor
from croft.notify.desktop import (
    applescript_string,
    desktop_command,
    markup_escape,
    notifier_env,
    notify_send_command,
    osascript_command,
)
from croft.notify.message import (
    Failed,
    failure_message,
    failure_payload,
    name_list,
    one_line,
    recovered_message,
)
from croft.notify.streaks import on_failures, on_successes

NASTY = 'say "hi" \\ back\\slash\nnew line\t<b>bold</b> & done ünïcødé 🚀 end'
SECRET = "sk_live_0123456789"
REDACT = Redactor({"API_KEY": SECRET}).text


def read_applescript_literal(literal: str) -> str:
    """The text an AppleScript string literal denotes (the inverse of applescript_string)."""
    assert literal[0] == literal[-1] == '"'
    return re.sub(r"\\(.)", r"\1", literal[1:-1])


# -- messages ---------------------------------------------------------------------------------------


def test_names_are_listed_then_counted():
    assert name_list(["a"]) == "a"
    assert name_list(["a", "b"]) == "a and b"
    assert name_list(["a", "b", "c"]) == "a, b and c"
    assert name_list(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more"


def test_one_asset_names_the_project_the_asset_the_code_and_the_command():
    error = {"code": "HTTP_ERROR", "message": "GET https://api.example/orders returned 400 Bad Request"}
    title, body = failure_message("shop", "r_1", [Failed("orders", error)], REDACT)
    assert title == "croft: shop"
    assert body == (
        "orders failed in a scheduled run: HTTP_ERROR: GET https://api.example/orders returned 400 Bad Request."
        " See it with: croft logs orders --failed"
    )


def test_several_assets_are_counted_and_the_command_names_the_one_whose_error_is_shown():
    failed = [Failed(n) for n in ("a", "b")] + [Failed("c", {"code": "TIMEOUT", "message": "slow!"})]
    failed += [Failed("d"), Failed("e")]
    _, body = failure_message("p", "r_1", failed, REDACT)
    assert body.startswith("a, b, c and 2 more failed in a scheduled run: TIMEOUT: slow! ")
    assert body.endswith("croft logs c --failed")


def test_a_crash_without_an_error_names_the_asset_and_the_command_only():
    _, body = failure_message("p", "r_1", [Failed("orders")], REDACT)
    assert body == "orders failed in a scheduled run. See it with: croft logs orders --failed"


def test_nothing_listed_points_at_the_run():
    assert failure_message("p", "r_0101_0900_abcd", [], REDACT)[1] == (
        "A scheduled run failed. See it with: croft logs r_0101_0900_abcd"
    )


def test_a_long_multiline_message_is_redacted_then_collapsed_and_cut():
    message = f"line one\n\n\tkey={SECRET}\x07 " + "x" * 400
    _, body = failure_message(
        "p", "r", [Failed("a", {"code": "ASSET_CODE_ERROR", "message": message})], REDACT
    )
    assert SECRET not in body and "[redacted:API_KEY]" in body
    shown = body.split(": ", 1)[1].split(" See it with")[0]
    assert "\n" not in shown and "\t" not in shown and "\x07" not in shown and "  " not in shown
    assert shown.endswith("…") and len(shown) <= 181
    assert one_line(f"{'y' * 170}{SECRET}", REDACT).count("[redacted:API_KEY]") == 0  # cut after redaction
    assert SECRET[:6] not in one_line(f"{'y' * 170}{SECRET}", REDACT)


def test_a_reminder_says_how_long_it_has_been_failing_and_recovery_says_it_is_over():
    _, body = failure_message("p", "r", [Failed("orders")], REDACT, streak=4)
    assert body.startswith("orders still fails in scheduled runs (4 in a row).")
    title, body = recovered_message("p", [("orders", 4)])
    assert (title, body) == (
        "croft: p",
        "orders succeeded again after 4 failed scheduled runs. See it with: croft logs orders",
    )


def test_a_built_payload_has_the_envelope_keys_in_order():
    payload = failure_payload(
        "p",
        "croft: p",
        "body",
        run_id="r_1",
        failed=[Failed("a", {"code": "X", "message": "m"})],
        streak=1,
        summary=None,
    )
    assert list(payload) == ["project", "text", "event", "streak", "data", "problems", "next", "exit", "ok"]
    assert payload["text"] == "croft: p — body"
    assert payload["data"] == {"runId": "r_1", "status": "failed", "steps": []}
    assert payload["next"] == [{"command": "croft logs a --failed", "reason": "see what failed"}]
    assert (payload["event"], payload["exit"], payload["ok"]) == ("failed", 1, False)


# -- desktop commands ---------------------------------------------------------------------------------


def test_applescript_literal_escapes_quotes_and_backslashes_and_reads_back():
    literal = applescript_string('a "b" \\c')
    assert literal == '"a \\"b\\" \\\\c"'
    assert read_applescript_literal(literal) == 'a "b" \\c'


def test_applescript_line_breaks_and_control_characters_become_spaces_and_unicode_is_kept():
    literal = applescript_string("a\nb\rc\td\x00e\u2028f\u2029g ünï 🚀")
    assert read_applescript_literal(literal) == "a b c d e f g ünï 🚀"


def test_osascript_gets_one_display_notification_statement_and_injection_stays_inside_the_literals():
    attack = 'x" & (do shell script "touch /tmp/pwned") & "'
    command = osascript_command(f"croft: {attack}", NASTY + attack)
    assert command[:2] == ["/usr/bin/osascript", "-e"] and len(command) == 3
    literal = r'"(?:[^"\\]|\\.)*"'
    match = re.fullmatch(rf"display notification ({literal}) with title ({literal})", command[2])
    assert match, command[2]
    assert read_applescript_literal(match[1]) == NASTY.replace("\n", " ").replace("\t", " ") + attack
    assert read_applescript_literal(match[2]) == f"croft: {attack}"


def test_notify_send_gets_the_app_name_ended_options_and_an_escaped_one_line_body():
    command = notify_send_command("croft: p", NASTY)
    assert command[:4] == ["notify-send", "-a", "croft", "--"]
    title, body = command[4:]
    assert title == "croft: p"
    assert body == ('say "hi" \\\\ back\\\\slash new line &lt;b&gt;bold&lt;/b&gt; &amp; done ünïcødé 🚀 end')
    assert notify_send_command("croft: p", "--help -u critical")[-1] == "--help -u critical"
    assert markup_escape("<&>") == "&lt;&amp;&gt;"


def test_other_platforms_have_no_command():
    assert desktop_command("win32", "t", "b") is None
    assert desktop_command("darwin", "t", "b")[0] == "/usr/bin/osascript"  # type: ignore[index]
    assert desktop_command("linux", "t", "b")[0] == "notify-send"  # type: ignore[index]


def test_the_notifier_env_is_explicit_and_finds_the_session_bus_under_cron(tmp_path):
    (tmp_path / "bus").write_text("")  # stands for the socket: only its existence is checked
    cron_env = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "SHELL": "/bin/sh", "API_KEY": SECRET}
    env = notifier_env({**cron_env, "XDG_RUNTIME_DIR": str(tmp_path)}, "linux")
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "XDG_RUNTIME_DIR": str(tmp_path),
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'bus'}",
    }
    given = notifier_env({**cron_env, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x", "DISPLAY": ":0"}, "linux")
    assert given["DBUS_SESSION_BUS_ADDRESS"] == "unix:path=/x" and given["DISPLAY"] == ":0"
    mac = notifier_env(cron_env, "darwin")
    assert mac == {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "LANG": "en_US.UTF-8"}


def test_without_a_runtime_folder_the_bus_is_looked_for_under_run_user(tmp_path):
    env = notifier_env({"PATH": "/bin"}, "linux", uid=987654)
    assert "DBUS_SESSION_BUS_ADDRESS" not in env  # /run/user/987654/bus does not exist


# -- the streak rule ----------------------------------------------------------------------------------


def at(hours: float) -> datetime:
    return datetime(2026, 11, 2, 9, tzinfo=UTC) + timedelta(hours=hours)


def test_a_streak_notifies_once_then_reminds_daily_then_recovers_once():
    streaks: dict = {}
    said = []
    for hours in (0, 1, 2, 23.9, 24, 25, 48):
        streaks, notify, longest = on_failures(streaks, ["orders"], at(hours))
        said.append((hours, notify, longest))
    assert [(h, n) for h, n, _ in said if n] == [(0, ["orders"]), (24, ["orders"]), (48, ["orders"])]
    assert said[4][2] == 5 and streaks["orders"]["count"] == 7
    streaks, ended = on_successes(streaks, ["orders", "other"])
    assert (streaks, ended) == ({}, [("orders", 7)])
    assert on_successes(streaks, ["orders"]) == ({}, [])


@pytest.mark.parametrize("bad", [None, "yesterday", 5])
def test_a_garbled_stored_streak_notifies_rather_than_staying_silent(bad):
    streaks = {"orders": {"count": 3, "notifiedAt": bad}}
    _, notify, _ = on_failures(streaks, ["orders"], at(0))
    assert notify == ["orders"]
