"""Running the few OS programs the scheduler needs (crontab, launchctl, systemctl, loginctl), one way.

Each gets the ``program`` environment of ``core.children`` (never croft's own, which may hold secrets) and a
timeout, and a missing program is an answer (status None), not an exception: the callers turn it into
INSTALL_FAILED with the right hint.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from croft.core.children import child_env

__all__ = ["Completed", "Runner", "run"]


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    status: int | None  # None: the program is not installed
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def words(self) -> str:
        """What the program said, for a message: stderr, else stdout, else its exit status."""
        text = (self.stderr or self.stdout).strip()
        if self.status is None:
            return f"{self.argv[0]} is not installed"
        return text or f"exit status {self.status}"


Runner = Callable[[Sequence[str], str | None], Completed]


def run(argv: Sequence[str], stdin: str | None = None) -> Completed:
    try:
        proc = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            env=child_env("program"),
            timeout=30,
            check=False,
        )
    except FileNotFoundError:
        return Completed(tuple(argv), None, "", "")
    except subprocess.TimeoutExpired:
        return Completed(tuple(argv), 124, "", f"{argv[0]} did not answer within 30 s")
    return Completed(tuple(argv), proc.returncode, proc.stdout, proc.stderr)
