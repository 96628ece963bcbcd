"""``croft doctor``'s notifications line, over a REAL D-Bus session bus and without one: what croft.json's
notify configures, whether the desktop can be reached the way a scheduled run reaches it, and the last
delivery and the last failure of notify.log, in the human screen and in ``--json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from schedulekit import env_at

from croft.core.clock import parse_instant
from croft.engine.runner import RunOptions, run_assets
from croft.history.db import open_history
from croft.notify.desktop import reach
from croft.notify.log import ROTATE_BYTES, last_outcomes, log_miss, log_sent
from croft.project.config import load_project
from croft.scheduler.control.notifylink import Notifying, notify_link
from croft.scheduler.setting import write_scheduling
from croft.scheduler.user.registry import Registry

pytestmark = pytest.mark.processes


NOW = "2026-12-01T09:00:00Z"
LATER = "2026-12-01T09:05:00Z"
ORDERS = """
from croft import ingest


@ingest(key="id", secrets=["MODE"])
def rows(ctx):
    if ctx.secret("MODE") == "broken-7f3":
        raise ValueError("the shop said no")
    return [{"id": 1}]
"""
SESSION = ("CROFT_NOTIFY_DRY", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR")


def _ticked_by(root: Path, via: str) -> None:
    """On and registered, as `croft schedule on` leaves it (no OS job is installed by a test)."""
    conn = open_history(root / ".croft")
    write_scheduling(conn, "on", parse_instant(NOW), via=via)  # type: ignore[arg-type]
    conn.close()
    Registry().add(root, via, parse_instant(NOW))


def _doctor(root: Path, now: str, **env: str) -> tuple[int, dict[str, Any], str]:
    """(exit, the --json envelope, the human screen) of real `croft doctor` processes."""
    base = {k: v for k, v in env_at(now).items() if k not in SESSION} | env
    machine = subprocess.run(
        [sys.executable, "-m", "croft", "doctor", "--json"],
        cwd=root,
        env=base,
        capture_output=True,
        text=True,
    )
    human = subprocess.run(
        [sys.executable, "-m", "croft", "doctor"], cwd=root, env=base, capture_output=True, text=True
    )
    assert human.returncode == machine.returncode
    return machine.returncode, json.loads(machine.stdout), human.stdout + human.stderr


def _line(envelope: dict[str, Any], root: Path) -> dict[str, Any]:
    [check] = [c for c in envelope["data"]["checks"] if c["check"] == f"notifications {root}"]
    return check


def _run(root: Path, mode: str, monkeypatch: pytest.MonkeyPatch, now: str) -> str:
    (root / ".env").write_text(f"MODE={mode}\n")
    monkeypatch.setenv("CROFT_NOW", now)
    result = run_assets(load_project(root), RunOptions(trigger="schedule", human=False))
    return result.envelope()["data"]["steps"][0]["status"]


def test_a_delivery_and_a_failure_over_a_real_bus_show_in_doctor(
    session_bus: tuple[Path, Path], make_project: Any, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime, received = session_bus
    for name in SESSION:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # as under cron: only the runtime folder's bus
    answers = {"status": 400}
    server.route("POST", "/hook", lambda *_: (answers["status"], {}, {"said": "no"}))
    hook = server.url("/hook")
    root = make_project({"assets/orders.py": ORDERS}, notify={"webhook": hook, "ping": server.url("/ping")})
    _ticked_by(root, "os-job")
    host = hook.split("/")[2]

    assert _run(root, "broken-7f3", monkeypatch, NOW) == "failed"  # shown on the bus; the webhook says 400
    assert len(received.read_text().splitlines()) == 1
    code, envelope, human = _doctor(root, "2026-12-01T09:02:00Z", XDG_RUNTIME_DIR=str(runtime))
    check = _line(envelope, root)
    assert check["ok"] and check["warning"] is True  # the webhook's last try failed: not a ✔
    [facts] = [n for n in envelope["data"]["notifications"] if n["root"] == str(root)]
    assert facts["configured"] == ["desktop (the default)", f"webhook {host}", f"ping {host}"]
    assert facts["desktop"]["reachable"] is True and str(runtime / "bus") in facts["desktop"]["said"]
    assert facts["lastSent"]["text"] == "desktop (notify-send): a failed run"
    assert facts["lastFailure"]["text"] == f"webhook {host}: HTTP 400 (not retried)"
    assert facts["lastSent"]["at"].startswith("2026-12-01T09:00:00")
    [warned] = [p for p in envelope["problems"] if p["code"] == "NOTIFY_FAILING"]
    assert warned["severity"] == "warning" and warned["details"]["cause"] == "last_failed"
    assert f"croft notify test --project {root}" in warned["hint"]  # the command that checks the fix
    assert f"⚠ notifications {root}: desktop (the default), webhook {host}, ping {host};" in human
    assert "last sent 09:00: desktop (notify-send): a failed run" in human  # the reader's clock, no seconds
    assert f"last failure 09:00: webhook {host}: HTTP 400 (not retried); the last try failed" in human
    shown = next(line for line in human.splitlines() if line.startswith("⚠ notifications"))
    assert "2026-12-01" not in shown and ":00:00" not in shown  # no machine instant, no seconds

    answers["status"] = 200  # the receiver is fixed; the asset too: the recovery goes out on both channels
    assert _run(root, "fine-2c9", monkeypatch, LATER) == "ok"
    assert len(received.read_text().splitlines()) == 2
    code_after, envelope, human = _doctor(root, "2026-12-01T09:06:00Z", XDG_RUNTIME_DIR=str(runtime))
    check = _line(envelope, root)
    assert check["ok"] and "warning" not in check and code_after == code  # a warning never set the exit
    assert not [p for p in envelope["problems"] if p["code"] == "NOTIFY_FAILING"]
    assert f"✔ notifications {root}:" in human
    assert f"last sent 09:05: webhook {host} (HTTP 200): a recovery" in human
    assert f"last failure 09:00: webhook {host}: HTTP 400 (not retried)" in human  # still told, as history
    logged = (root / ".croft/logs/notify.log").read_text()
    assert "the shop said no" not in logged and hook not in logged  # one line each, URLs by host


def test_no_session_bus_is_a_warning_with_its_hint_not_a_tick(
    tmp_path: Path, make_project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A headless machine: notify-send is there but no bus; doctor warns (exit unchanged) and says what to do."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the session bus is Linux's")
    empty = tmp_path / "runtime"
    empty.mkdir(mode=0o700)
    root = make_project({"assets/orders.py": ORDERS})
    _ticked_by(root, "serve")
    monkeypatch.setenv("CROFT_NOW", "2026-12-01T08:58:00Z")
    log_miss(root / ".croft", "r_1201_0858_abcd", "desktop: notify-send exited 1: Cannot autolaunch D-Bus")
    found = reach({"PATH": os.environ["PATH"], "XDG_RUNTIME_DIR": str(empty)}, "linux", job=False)
    if found.cause == "no_sender":  # doctor names that first; CI has notify-send (the D-Bus test needs it)
        if os.environ.get("CI"):
            pytest.fail("CI must have notify-send (apt-get install libnotify-bin)")
        pytest.skip("notify-send is not installed here")
    code, envelope, human = _doctor(root, NOW, XDG_RUNTIME_DIR=str(empty))
    check = _line(envelope, root)
    assert check["ok"] and check["warning"] is True and check["fix"] is None
    assert f"there is no bus socket {empty / 'bus'}" in check["detail"]
    [warned] = [p for p in envelope["problems"] if p["code"] == "NOTIFY_FAILING"]
    assert warned["severity"] == "warning" and warned["details"]["cause"] == "desktop_no_bus"
    assert '"desktop": false' in warned["hint"] and "webhook" in warned["hint"]
    [facts] = envelope["data"]["notifications"]
    assert facts["desktop"] == {"reachable": False, "said": found.said, "cause": "no_bus"}
    assert facts["lastFailure"]["text"] == "desktop: notify-send exited 1: Cannot autolaunch D-Bus"
    assert facts["lastSent"] is None
    assert f"⚠ notifications {root}: desktop (the default); nothing sent yet; last failure 08:58:" in human
    assert "warning: NOTIFY_FAILING" in human and "more: croft docs NOTIFY_FAILING" in human

    _, envelope, _ = _doctor(root, NOW, XDG_RUNTIME_DIR=str(empty), CROFT_NOTIFY_DRY="1")
    check = _line(envelope, root)  # dry: the desktop's messages are recorded in a file, as the sender does
    assert "recorded in notifications.ndjson, not shown" in check["detail"]
    assert "cannot be reached" not in check["detail"]  # (the logged desktop miss still warns: last_failed)

    (root / "croft.json").write_text(json.dumps({"timezone": "Europe/London", "notify": {"desktop": False}}))
    code_off, envelope, human = _doctor(root, NOW, XDG_RUNTIME_DIR=str(empty))
    check = _line(envelope, root)
    assert code_off == code and "warning" not in check and check["detail"].startswith("desktop off;")
    assert not [p for p in envelope["problems"] if p["code"] == "NOTIFY_FAILING"]


def test_a_bus_only_this_shell_has_gets_a_fix_that_works(
    session_bus: tuple[Path, Path], tmp_path: Path, make_project: Any
) -> None:
    """cron gives a job none of the session's variables: a bus found only through this shell's
    DBUS_SESSION_BUS_ADDRESS is unreachable for the OS job; the fix (tick from croft serve) makes it reachable."""
    runtime, _ = session_bus
    elsewhere = tmp_path / "no-bus-here"
    elsewhere.mkdir(mode=0o700)
    shell = {"XDG_RUNTIME_DIR": str(elsewhere), "DBUS_SESSION_BUS_ADDRESS": f"unix:path={runtime / 'bus'}"}
    root = make_project({"assets/orders.py": ORDERS})
    _ticked_by(root, "os-job")
    _, envelope, human = _doctor(root, NOW, **shell)
    check = _line(envelope, root)
    assert check["warning"] is True and check["fix"] == f"croft schedule on --no-os-job --project {root}"
    assert f"    fix: croft schedule on --no-os-job --project {root}" in human
    fixed = subprocess.run(
        [*check["fix"].replace("croft", f"{sys.executable} -m croft", 1).split(), "--json"],
        env={k: v for k, v in env_at(NOW).items() if k not in SESSION} | shell,
        capture_output=True,
        text=True,
    )
    assert json.loads(fixed.stdout)["data"]["scheduling"]["via"] == "serve", fixed.stdout + fixed.stderr
    _, envelope, human = _doctor(root, NOW, **shell)
    check = _line(envelope, root)
    assert "warning" not in check and f"the session bus {runtime / 'bus'}" in check["detail"], check


def test_the_decision_from_the_facts() -> None:
    """notify_link by value: a miss older than the last delivery, or of a channel now off, is history."""
    from croft.notify.desktop import Reach
    from croft.notify.log import Logged

    sent = Logged("2026-12-01T09:00:00.000Z", "r_1", "desktop (notify-send): a failed run", 2)
    old = Logged("2026-12-01T08:00:00.000Z", "r_0", "webhook h: HTTP 500", 1)
    new = Logged("2026-12-01T10:00:00.000Z", "r_2", "webhook h: HTTP 500", 3)
    up = Reach(True, "notify-send over the session bus /run/user/1/bus")
    facts = Notifying(("desktop", "webhook h"), True, "h", up, None, sent, old)
    assert not notify_link("/p", facts, "os-job").warn
    assert notify_link(
        "/p", Notifying(("desktop", "webhook h"), True, "h", up, None, sent, new), "os-job"
    ).warn
    assert not notify_link("/p", Notifying(("desktop",), True, None, up, None, sent, new), "os-job").warn
    down = Reach(False, "notify-send is not installed", "no_sender", "sudo apt-get install libnotify-bin")
    warned = notify_link("/p", Notifying(("desktop",), True, None, down), "os-job")
    assert (
        warned.warn
        and warned.fix == "sudo apt-get install libnotify-bin"
        and warned.cause == "desktop_no_sender"
    )
    assert notify_link("/p", Notifying(unreadable="croft.json is not JSON"), "os-job").ok


def test_notify_log_is_bounded_and_its_last_lines_are_read_across_the_rotation(tmp_path: Path) -> None:
    state = tmp_path / ".croft"
    log_sent(state, "r_1", "desktop (notify-send)", "a failed run")
    log_miss(
        state, "r_2", "webhook h: token=sk_live_x failed", lambda t: t.replace("sk_live_x", "[redacted]")
    )
    sent, miss = last_outcomes(state)
    assert sent is not None and (sent.run_id, sent.text) == ("r_1", "desktop (notify-send): a failed run")
    assert miss is not None and miss.text == "webhook h: token=[redacted] failed"
    path = state / "logs" / "notify.log"
    filler = "2026-12-01T09:00:00.000Z - ping h: no answer within 3 s\n"
    with open(path, "a") as f:  # grown to its bound by a ping missing every minute for weeks
        f.write(filler * ((ROTATE_BYTES - path.stat().st_size) // len(filler)))
    log_sent(state, "r_3", "webhook h (HTTP 200)", "a recovery")  # the last line of the full log
    log_miss(state, "r_4", "ping h: no answer within 3 s")  # this write rotates it first
    assert (state / "logs" / "notify.log.1").stat().st_size > ROTATE_BYTES
    assert path.read_text().count("\n") == 1  # a new log, bounded again
    sent, miss = last_outcomes(state, keep=lambda text: not text.startswith("ping "))
    assert sent is not None and sent.run_id == "r_3"  # read from the rotated copy's tail
    assert miss is None  # the webhook miss is far back, beyond the tail a doctor reads
    _, any_miss = last_outcomes(state)
    assert any_miss is not None and any_miss.run_id == "r_4"
