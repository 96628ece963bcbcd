"""The systemd backend: a user timer + oneshot service pair in ``~/.config/systemd/user/``.

Units are ``croft-tick.timer``/``.service`` for the default label and named after any other label
(``CROFT_JOB_LABEL``), so a test's label never meets a real user's units. Values are quoted for
systemd: double quotes with C escapes, ``%`` doubled (specifiers) and, on the ExecStart line, ``$``
doubled (variable expansion); the log path (``StandardOutput=append:``) takes no quotes, only ``%%``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from croft.core.paths import DEFAULT_LABEL, data_path
from croft.scheduler.jobs.base import JobState, fill, install_failed, refuse_unholdable
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Completed, Runner, run
from croft.scheduler.jobs.spec import JobSpec

__all__ = [
    "Systemd",
    "linger_command",
    "linger_link",
    "linger_warning",
    "quote",
    "render_units",
    "unit_dir",
    "unit_name",
]


def _holdable(char: str) -> bool:
    """A unit file is read line by line: a line break would end a setting in the middle of a path."""
    return char not in "\n\r"


def quote(value: str, *, exec_line: bool = False) -> str:
    """One double-quoted systemd word: C escapes for ``\\`` and ``"``, ``%`` doubled (specifiers) and, on
    the ExecStart line, ``$`` doubled (variable expansion). Every other character is kept as it is, control
    characters included (systemd hands them on unchanged; a line break is refused before this)."""
    out = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if exec_line:
        out = out.replace("$", "$$")
    return f'"{out}"'


def _executable(python: str) -> str:
    """systemd refuses an executable path holding quotes, a backslash, ``$`` or a character it counts as
    special (control characters, and more); ``/usr/bin/env`` then runs it as an argument, which may hold
    anything."""
    quoted = quote(python, exec_line=True)
    plain = all(c.isprintable() and c not in "\"'\\$" for c in python)
    return quoted if plain else f"/usr/bin/env {quoted}"


def render_units(spec: JobSpec) -> dict[str, str]:
    """``{"<label>.service": text, "<label>.timer": text}`` from the templates shipped in systemd/."""
    refuse_unholdable("systemd", "a systemd unit", spec, _holdable)
    service = data_path("systemd", "croft-tick.service").read_text(encoding="utf-8")
    timer = data_path("systemd", "croft-tick.timer").read_text(encoding="utf-8")
    return {
        f"{unit_name(spec.label)}.service": fill(
            service,
            python=_executable(spec.python),
            args=" ".join(quote(word, exec_line=True) for word in spec.args()),
            croft_home=quote(f"CROFT_HOME={spec.croft_home}"),
            log=spec.log.replace("%", "%%"),
        ),
        f"{unit_name(spec.label)}.timer": timer,
    }


def unit_name(label: str) -> str:
    """``croft-tick`` for the default label (the name the guides give); the label itself otherwise."""

    return "croft-tick" if label == DEFAULT_LABEL else label


def unit_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "systemd" / "user"


def _user() -> str:
    return os.environ.get("USER") or os.environ.get("LOGNAME") or str(os.getuid())


def linger_command() -> str:
    return f"loginctl enable-linger {_user()}"


def linger_warning(runner: Runner | None = None) -> str | None:
    """Why the timer may stop at logout (no linger and no graphical session), or None."""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    user = _user()
    if Path("/var/lib/systemd/linger", user).exists():
        return None
    done = (runner or (lambda a, s: run(a, s)))(["loginctl", "show-user", user, "-p", "Linger"], None)
    if done.ok and "Linger=yes" in done.stdout:
        return None
    return (
        f"{user} has no lingering user manager and no graphical session here, so systemd stops the timer"
        f" when you log out; `{linger_command()}` keeps it running"
    )


def linger_link(why: str | None) -> Link:
    """The "linger" link from ``linger_warning``'s answer (kept apart so it is tested by value)."""
    if why is None:
        return Link.holds("linger", "the user manager keeps running")
    return Link.broken("linger", why, "no_linger", linger_command())


class Systemd:
    name = "systemd"

    def __init__(self, runner: Runner | None = None, directory: Path | None = None):
        self.runner: Runner = runner or (lambda argv, stdin: run(argv, stdin))
        self.directory = directory or unit_dir()

    def _ctl(self, *args: str) -> Completed:
        return self.runner(["systemctl", "--user", *args], None)

    def _must(self, done: Completed, what: str) -> None:
        if not done.ok:
            raise install_failed(
                "systemd",
                what,
                done,
                "Check that your user manager runs (`systemctl --user status`).",
                unitDir=str(self.directory),
            )

    def install(self, spec: JobSpec) -> bool:
        units = render_units(spec)
        changed = False
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, text in units.items():
            path = self.directory / name
            if _read(path) != text:
                _write(path, text)
                changed = True
        if changed:
            self._must(self._ctl("daemon-reload"), "reload the user manager")
        timer = f"{unit_name(spec.label)}.timer"
        if changed or not self._ctl("is-active", "--quiet", timer).ok:
            self._must(self._ctl("enable", "--now", timer), "enable the scheduler timer")
            changed = True
        return changed

    def remove(self, label: str) -> bool:
        paths = [self.directory / f"{unit_name(label)}.timer", self.directory / f"{unit_name(label)}.service"]
        existed = any(p.exists() for p in paths)
        if existed:
            self._ctl("disable", "--now", f"{unit_name(label)}.timer")
        for p in paths:
            p.unlink(missing_ok=True)
        if existed:
            self._ctl("daemon-reload")
        return existed

    def inspect(self, label: str) -> JobState:
        service = self.directory / f"{unit_name(label)}.service"
        installed = service.exists() and (self.directory / f"{unit_name(label)}.timer").exists()
        loaded = self._ctl("is-active", "--quiet", f"{unit_name(label)}.timer").ok if installed else False
        return JobState(
            "systemd",
            label,
            installed=installed,
            loaded=loaded,
            python=_exec_python(_read(service) or ""),
            location=str(self.directory / f"{unit_name(label)}.timer"),
        )

    def health(self) -> list[Link]:
        """A user timer fires only while the user manager lives, which without linger ends at logout."""
        return [linger_link(linger_warning(self.runner))]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _exec_python(text: str) -> str | None:

    for line in text.split("\n"):  # as systemd splits a unit (str.splitlines also splits at U+2028)
        if line.startswith("ExecStart="):
            try:
                words: Sequence[str] = shlex.split(line[len("ExecStart=") :])
            except ValueError:
                return None
            if words[:1] == ["/usr/bin/env"]:
                words = words[1:]
            return words[0].replace("$$", "$").replace("%%", "%") if words else None
    return None
