"""The systemd backend against a real user manager (tests/systemdkit.py), not a recording fake.

``croft schedule on`` with the default backend picks systemd because a user manager answers, writes the
units, and the timer fires ``croft tick --all`` on the minute under a CROFT_HOME whose name holds what a
unit file would misread unquoted (``${log}``, ``$HOME``, ``%n``, quotes, a backslash, backticks, ``;``,
``#``, unicode, a control character): the tick finds the registry there, ticks the project (its
heartbeat arrives) and logs to that CROFT_HOME's tick log. ``schedule off`` then disables the timer and
removes both units.

Root only (the manager needs a mount namespace of its own); elsewhere it skips saying so, and with
CI=true it fails instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from systemdkit import UserManager, user_manager, why_not
from userkit import cannot
from waiting import wait_for

from croft.scheduler import heartbeat
from croft.scheduler.jobs.spec import job_spec

HOSTILE = "croft home ${log} $HOME %n back\\slash \"q\" 's' `id` ; # é \x1b end"
LABEL = "dev.croft.e2e-systemd"
INGEST = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield [{"id": 1}]
"""


def croft(
    manager: UserManager, root: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return manager.run([sys.executable, "-m", "croft", *args], env=env, cwd=root)


def test_schedule_on_picks_systemd_its_timer_ticks_under_a_hostile_croft_home_and_off_removes_it(
    make_project,
) -> None:
    reason = why_not()
    if reason:
        cannot(reason)
    root = make_project({"assets/rows.py": INGEST}, timezone="UTC")
    with user_manager() as manager:
        home = manager.home / HOSTILE
        env = {"CROFT_HOME": str(home), "CROFT_JOB_LABEL": LABEL, "CROFT_NOTIFY_DRY": "1"}
        units = manager.config / "systemd" / "user"
        by_hand = croft(manager, root, env, "run", "--json")
        assert by_hand.returncode == 0, by_hand.stdout + by_hand.stderr

        on = croft(manager, root, env, "schedule", "on", "--json")  # --backend auto
        assert on.returncode == 0, on.stdout + on.stderr + manager.logs()
        data = json.loads(on.stdout)["data"]
        assert data["job"]["backend"] == "systemd" and data["job"]["python"] == sys.executable
        assert sorted(p.name for p in units.glob(f"{LABEL}.*")) == [f"{LABEL}.service", f"{LABEL}.timer"]
        assert manager.systemctl("is-active", f"{LABEL}.timer").stdout.strip() == "active"
        # the timer fired `croft tick --all` with CROFT_HOME exactly as it is: the tick read the registry
        # there and ticked the project, and systemd appended its output to the log there
        log = home / "logs" / "tick.log"
        assert data["firstTick"]["ok"], json.dumps(data["firstTick"]) + manager.logs()
        wait_for(
            lambda: log.exists() and f"{root.name}: tick started (pid " in log.read_text(),
            "the tick's log line",
        )
        assert heartbeat.last_heartbeat(root / ".croft") is not None
        shown = manager.systemctl("show", f"{LABEL}.service", "-p", "ExecStart", "--value").stdout
        command = " ".join(job_spec(sys.executable).argv())
        assert f"argv[]=/usr/bin/env {command}" in shown or f"argv[]={command}" in shown, shown

        off = croft(manager, root, env, "schedule", "off", "--json")
        assert off.returncode == 0, off.stdout + off.stderr
        assert list(units.glob(f"{LABEL}.*")) == []
        assert list(units.glob(f"*.wants/{LABEL}.*")) == []  # the enable link too
        assert manager.systemctl("is-active", f"{LABEL}.timer").stdout.strip() == "inactive"
        listed = manager.systemctl("list-timers", "--all", "--no-legend").stdout
        assert LABEL not in listed, listed
