"""What every OS job runs: an absolute interpreter that has croft, ``-S -P <croft>/cli/minute.py`` (the
minute gate, then ``croft tick --all``: ``cli.minute`` says why not ``-m croft``), the tick log.

The job must not depend on the shell's PATH (cron and launchd give a bare one) nor on an interpreter that
will vanish (a temporary or cached environment from ``uvx``/``pipx run``), so the spec records the running
interpreter's absolute path and says when it looks temporary.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from croft.core.children import child_env
from croft.core.paths import croft_home, job_label
from croft.core.problems import Problem, problem
from croft.scheduler.ticklog import tick_log_path

__all__ = ["JobSpec", "interpreter_imports_croft", "job_spec", "temporary_reason", "tick_log"]

ENTRY = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "cli", "minute.py"
)
_TEMPORARY_PARTS = ("/.cache/", "/pip-build-env-", "/pipx/.cache/", "/uv/archive-", "/pytest-of-")


@dataclass(frozen=True)
class JobSpec:
    label: str
    python: str
    croft_home: str
    log: str
    entry: str = ENTRY  # this croft's cli/minute.py

    def argv(self) -> list[str]:
        """The one command every backend writes (crontab line, ExecStart, ProgramArguments)."""
        return [self.python, *self.args()]

    def args(self) -> list[str]:
        """What follows the interpreter: no ``site`` and no folder of the script's put first on the path."""
        return ["-S", "-P", self.entry]

    def env(self) -> dict[str, str]:
        return child_env("job", {"CROFT_HOME": self.croft_home})


def tick_log(home: Path | None = None) -> Path:
    return tick_log_path(home or croft_home())


def job_spec(python: str | None = None) -> JobSpec:
    label = job_label()  # the label's rule is the knob's (core.knobs)
    home = croft_home()
    return JobSpec(
        label=label,
        python=os.path.abspath(python or sys.executable),
        croft_home=os.path.abspath(home),
        log=os.path.abspath(tick_log(home)),
    )


def temporary_reason(python: str) -> str | None:
    """Why ``python`` will probably not be there next week, or None when it looks like it stays."""
    tmp = os.path.realpath(tempfile.gettempdir())
    for base in {tmp, "/tmp", "/var/tmp"}:
        if python.startswith(base.rstrip("/") + "/"):
            return f"it lives in the temporary folder {base}"
    for part in _TEMPORARY_PARTS:
        if part in python:
            return f"it lives in a cache ({part.strip('/')}) that is cleaned up"
    return None


def at_risk_problem(python: str) -> Problem | None:
    why = temporary_reason(python)
    if why is None:
        return None
    return problem(
        "JOB_AT_RISK",
        f"the scheduler job runs {python}, and {why}: once it is gone nothing ticks",
        "Install croft somewhere that stays (`pipx install croft` or a project venv), then run"
        " `croft schedule on` again with that croft.",
        severity="warning",
        details={"python": python},
    )


def interpreter_imports_croft(python: str) -> tuple[bool, str]:
    """Whether ``python`` imports croft in an environment as bare as the OS job's (so not through the
    shell's PYTHONPATH), and what it said."""
    try:
        done = subprocess.run(
            [python, "-c", "import croft.cli"],
            capture_output=True,
            text=True,
            timeout=30,
            env=child_env("probe"),
            check=False,
        )
    except OSError as exc:
        return False, f"{python} does not run: {exc.strerror or exc}"
    except subprocess.TimeoutExpired:
        return False, f"{python} did not answer within 30 s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"{python} cannot import croft: {last}"
    return True, f"{python} runs and imports croft"
