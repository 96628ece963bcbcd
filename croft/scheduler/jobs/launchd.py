"""The launchd backend: ``~/Library/LaunchAgents/<label>.plist`` from the launchd/ template.

Loaded with ``launchctl bootout`` + ``bootstrap gui/<uid>``; bootstrap right after bootout often fails
for a moment (``5: Input/output error``, "already", "in progress"), so those are retried a few times.
"""

from __future__ import annotations

import os
import plistlib
import time
from collections.abc import Callable
from html import escape
from pathlib import Path

from croft.core.paths import data_path
from croft.scheduler.jobs.base import JobState, fill, install_failed, refuse_unholdable
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Completed, Runner, run
from croft.scheduler.jobs.spec import JobSpec

__all__ = ["Launchd", "looks_transient", "render_plist"]

LAUNCHCTL = "/bin/launchctl"
_TRANSIENT_STATUS = (5, 17, 37)
_TRANSIENT_WORDS = ("input/output error", "already", "in progress")


def _holdable(char: str) -> bool:
    """What a plist's ``<string>`` gives back exactly: XML 1.0 forbids the other control characters (and
    U+FFFE, U+FFFF), and reads a carriage return back as a line feed; a line break is refused as in the
    other job formats."""
    code = ord(char)
    return (code >= 0x20 or char == "\t") and code not in (0xFFFE, 0xFFFF)


def render_plist(spec: JobSpec) -> str:
    refuse_unholdable("launchd", "a launchd plist", spec, _holdable)
    template = data_path("launchd", "dev.croft.tick.plist").read_text(encoding="utf-8")
    return fill(
        template,
        label=escape(spec.label, quote=False),
        python=escape(spec.python, quote=False),
        args="\n".join(f"    <string>{escape(word, quote=False)}</string>" for word in spec.args()),
        log=escape(spec.log, quote=False),
        croft_home=escape(spec.croft_home, quote=False),
    )


def looks_transient(done: Completed) -> bool:
    text = f"{done.stderr} {done.stdout}".lower()
    return done.status in _TRANSIENT_STATUS or any(w in text for w in _TRANSIENT_WORDS)


class Launchd:
    name = "launchd"

    def __init__(
        self,
        runner: Runner | None = None,
        directory: Path | None = None,
        uid: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.runner: Runner = runner or (lambda argv, stdin: run(argv, stdin))
        self.directory = directory or Path(os.path.expanduser("~")) / "Library" / "LaunchAgents"
        self.uid = os.getuid() if uid is None else uid
        self.sleep = sleep

    def _ctl(self, *args: str) -> Completed:
        return self.runner([LAUNCHCTL, *args], None)

    def plist(self, label: str) -> Path:
        return self.directory / f"{label}.plist"

    def _loaded(self, label: str) -> bool:
        return self._ctl("print", f"gui/{self.uid}/{label}").ok

    def install(self, spec: JobSpec) -> bool:
        path = self.plist(spec.label)
        text = render_plist(spec)
        same = _read(path) == text
        if same and self._loaded(spec.label):
            return False
        if not same:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
            self._ctl("bootout", f"gui/{self.uid}/{spec.label}")  # not loaded is fine
        for attempt in range(1, 6):
            done = self._ctl("bootstrap", f"gui/{self.uid}", str(path))
            if done.ok:
                return True
            if attempt == 5 or not looks_transient(done):
                break
            self.sleep(0.2 * attempt)
        gui = (
            done.status == 125
            or "domain does not support" in done.stderr.lower()
            or ("could not find domain" in done.stderr.lower())
        )
        raise install_failed(
            "launchd",
            "load its scheduler job",
            done,
            "launchd has no GUI session for this login (an SSH session?): log in at the Mac and run it there."
            if gui
            else "launchctl refused the job.",
            label=spec.label,
            plist=str(path),
        )

    def remove(self, label: str) -> bool:
        path = self.plist(label)
        out = self._ctl("bootout", f"gui/{self.uid}/{label}").ok
        existed = path.exists()
        path.unlink(missing_ok=True)
        return out or existed

    def inspect(self, label: str) -> JobState:
        path = self.plist(label)
        python = None
        if path.exists():
            try:
                args = plistlib.loads(path.read_bytes()).get("ProgramArguments") or []
                python = args[0] if args else None
            except Exception:  # a hand-edited plist launchd would refuse too
                python = None
        return JobState(
            "launchd",
            label,
            installed=path.exists(),
            loaded=self._loaded(label) if path.exists() else False,
            python=python,
            location=str(path),
        )

    def health(self) -> list[Link]:
        """None of its own: launchd needs no daemon started nor session kept, and "job loaded" already
        says whether it took the agent. (macOS privacy protection is about where a project lives, so it is
        the project's link, not the backend's.)"""
        return []


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
