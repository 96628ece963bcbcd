"""The per-user OS job that runs ``croft tick --all`` every minute: crontab, launchd or systemd.

One job per user however many projects tick; ``auto`` picks launchd on macOS, systemd where a user
manager answers, else crontab.
"""

from __future__ import annotations

import sys

from croft.core.problems import CroftError
from croft.scheduler.jobs.base import SERVE_FALLBACK, Backend, JobState
from croft.scheduler.jobs.crontab import Crontab
from croft.scheduler.jobs.launchd import Launchd
from croft.scheduler.jobs.oscmd import Runner, run
from croft.scheduler.jobs.systemd import Systemd

__all__ = ["BACKENDS", "Backend", "JobState", "backend", "choose"]

BACKENDS = ("auto", "crontab", "launchd", "systemd")


def choose(runner: Runner | None = None, platform: str | None = None) -> str:
    plat = platform or sys.platform
    if plat == "darwin":
        return "launchd"
    if not plat.startswith("linux"):
        raise CroftError(
            "INSTALL_FAILED",
            f"croft's scheduler job needs macOS (launchd) or Linux (cron or systemd); this is {plat}",
            "Under Windows, use WSL; anywhere, `croft schedule on --no-os-job` and a running"
            " `croft serve` tick the project instead.",
            fix=dict(SERVE_FALLBACK),
            details={"job": "auto", "platform": plat},
        )
    done = (runner or (lambda a, s: run(a, s)))(["systemctl", "--user", "show-environment"], None)
    return "systemd" if done.ok else "crontab"


def backend(name: str, runner: Runner | None = None) -> Backend:
    """The backend called ``name`` (``auto`` resolved first)."""
    if name == "auto":
        name = choose(runner)
    if name == "crontab":
        return Crontab(runner)
    if name == "launchd":
        return Launchd(runner)
    if name == "systemd":
        return Systemd(runner)
    raise CroftError(
        "USAGE", f"--backend {name!r} is not a job backend", f"Use one of {', '.join(BACKENDS)}."
    )
