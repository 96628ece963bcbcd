"""Every ``CROFT_*`` environment knob in one table: its type, its range, its default, read here only.

A knob is read where it is used, through ``value``, so its meaning and its bounds are written once; a
value outside them is an error naming the variable (``KNOB_INVALID``; ``CROFT_NOW`` keeps its own
``CLOCK_INVALID``), never a silent fallback: ``CROFT_SERVE_INTERVAL_MS=0`` would tick a hundred
times a second, a garbled ``CROFT_RETRY_DELAYS`` would quietly retry at other times than asked.
``problems`` checks every knob at once, for the commands that hand the knobs on to the processes they
start (the ticks), so a bad one stops them before it can fail every run they start.

Only ``os`` is imported: the every-minute tick reads its knobs here. ``docs/environment.md`` lists the same
table (a test keeps the two in step).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from croft.core.instant import parse_instant
from croft.core.problems import CroftError
from croft.core.text import clip

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from croft.core.problems import Problem

__all__ = ["FAULTS", "KNOBS", "Knob", "is_label", "problems", "require_all", "value"]

FAULTS = ("before_commit", "after_stage", "before_run")
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_FLAGS = {"": False, "0": False, "false": False, "no": False, "off": False}
_TRUE = ("1", "true", "yes", "on")
_MAX_TEXT = 4096  # a knob longer than this is not one croft could mean
_MAX_DELAYS = 10


@dataclass(frozen=True, slots=True)
class Knob:
    """One knob: ``kind`` says how its text is read (``ms``: whole milliseconds; ``count``: a whole
    number; ``seconds``: comma-separated seconds; ``flag``; ``faults``; ``path``; ``label``; ``instant``),
    ``low``/``high`` bound a number (and every item of a list), ``default`` is its value when unset."""

    name: str
    kind: str
    default: Any
    meaning: str
    low: float = 0
    high: float = 0

    def rule(self) -> str:
        """The accepted values, in the words a message and docs/environment.md use."""
        if self.kind in ("ms", "count"):
            unit = " milliseconds" if self.kind == "ms" else ""
            return f"a whole number from {int(self.low)} to {int(self.high)}{unit}"
        if self.kind == "seconds":
            return (
                f"seconds from {int(self.low)} to {int(self.high)}, comma-separated (at most {_MAX_DELAYS})"
            )
        if self.kind == "flag":
            return "1 or 0 (true/false, yes/no also read)"
        if self.kind == "faults":
            return f"a comma-separated list of {', '.join(FAULTS)}"
        if self.kind == "path":
            return "an absolute folder path (~ is expanded)"
        if self.kind == "label":
            return "letters, digits, '.', '_' or '-' (up to 128), starting with a letter or digit"
        return "an ISO-8601 instant or epoch milliseconds, in the years 2 to 9998"


# The table. docs/environment.md has one row per knob, in this order.
KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob("CROFT_NOW", "instant", None, "the clock"),
        Knob("CROFT_HOME", "path", None, "the per-user folder"),
        Knob("CROFT_JOB_LABEL", "label", "dev.croft.tick", "the OS job's label"),
        Knob("CROFT_RETRY_DELAYS", "seconds", (30.0, 120.0), "the waits between attempts", 0, 3600),
        Knob("CROFT_LEASE_WAIT_MS", "ms", 10_000, "how long a run by hand waits for a lease", 0, 3_600_000),
        Knob("CROFT_FAULT", "faults", (), "crash testing"),
        Knob("CROFT_NOTIFY_DRY", "flag", False, "record desktop notifications instead of showing them"),
        Knob(
            "CROFT_NOTIFY_TIMEOUT_MS",
            "ms",
            None,
            "each webhook attempt's and the ping's timeout",
            50,
            120_000,
        ),
        Knob("CROFT_HEARTBEAT_WAIT_MS", "ms", 70_000, "schedule on's wait for the first tick", 0, 600_000),
        Knob("CROFT_SERVE_INTERVAL_MS", "ms", 60_000, "how often croft serve ticks", 100, 86_400_000),
        Knob("CROFT_MAX_SCHEDULED_RUNS", "count", None, "scheduled runs alive at once for this user", 1, 64),
        Knob("CROFT_DEBUG", "flag", False, "print an internal error's traceback too"),
        Knob("CROFT_AGENT", "flag", False, "a coding agent started this command: its runs approve no code"),
    )
}


def value(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The knob's value (its default when unset or empty); raises the knob's error for a bad value."""
    knob = KNOBS[name]
    raw = (os.environ if environ is None else environ).get(name, "")
    if raw.strip() == "":
        return knob.default
    parsed, why = _read(knob, raw)
    if why is not None:
        raise _error(knob, raw, why)
    return parsed


def problems(environ: Mapping[str, str] | None = None) -> list[Problem]:
    """Every knob set to a value croft refuses, as the problems ``value`` would raise."""
    source = os.environ if environ is None else environ
    out = []
    for knob in KNOBS.values():
        raw = source.get(knob.name, "")
        if raw.strip() == "":
            continue
        why = _read(knob, raw)[1]
        if why is not None:
            out.append(_error(knob, raw, why).problem)
    return out


def require_all(environ: Mapping[str, str] | None = None) -> None:
    """Raise the first bad knob's error (the others ride along) for a command that hands every knob on
    to the processes it starts: a tick, ``tick --all``, ``croft serve``."""
    bad = problems(environ)
    if bad:
        error = CroftError(bad[0])
        error.extra = bad[1:]
        raise error


def _read(knob: Knob, raw: str) -> tuple[Any, str | None]:
    """(the value, None) or (None, why it is refused)."""
    text = raw.strip()
    if len(text) > _MAX_TEXT:
        return None, f"it is {len(text)} characters long"
    kind = knob.kind
    if kind in ("ms", "count"):
        if not text.isdigit():
            return None, "it is not a whole number"
        number = int(text)
        if not knob.low <= number <= knob.high:
            return None, f"{number} is outside {int(knob.low)} to {int(knob.high)}"
        return number, None
    if kind == "seconds":
        parts = [p.strip() for p in text.split(",")]
        if len(parts) > _MAX_DELAYS:
            return None, f"it lists {len(parts)} delays"
        values = []
        for part in parts:
            try:
                seconds = float(part)
            except ValueError:
                return None, f"{part[:40]!r} is not a number of seconds"
            if not knob.low <= seconds <= knob.high:  # NaN fails both comparisons
                return None, f"{part[:40]} is outside {knob.low:g} to {knob.high:g} seconds"
            values.append(seconds)
        return tuple(values), None
    if kind == "flag":
        lowered = text.lower()
        if lowered in _FLAGS:
            return False, None
        if lowered in _TRUE:
            return True, None
        return None, "it is not 1 or 0"
    if kind == "faults":
        names = tuple(p.strip() for p in text.split(",") if p.strip())
        unknown = [n for n in names if n not in FAULTS]
        if unknown:
            return None, f"{unknown[0][:40]!r} is not a fault point"
        return names, None
    if kind == "path":
        expanded = os.path.expanduser(text)
        if "\n" in text or "\x00" in text or "\r" in text:
            return None, "it holds a line break or a NUL"
        if not os.path.isabs(expanded):
            return (
                None,
                "it is not an absolute path, so it would name another folder from each working folder",
            )
        return expanded, None
    if kind == "label":
        if not is_label(text):
            return None, "it is not a job label"
        return text, None
    try:
        return parse_instant(text), None
    except ValueError as exc:
        return None, str(exc)


def is_label(text: str) -> bool:
    """The OS job label's rule (it names a crontab comment, a plist and a unit file)."""
    return 0 < len(text) <= 128 and text[0].isascii() and text[0].isalnum() and set(text) <= _LABEL_CHARS


def _error(knob: Knob, raw: str, why: str) -> Any:

    shown = clip(raw.strip(), 80)
    if knob.kind == "instant":
        return CroftError(
            "CLOCK_INVALID",
            f"CROFT_NOW={shown!r} is not a time: {why}",
            "Set CROFT_NOW to an ISO-8601 instant such as 2026-03-08T09:00:00Z or to epoch milliseconds,"
            " or unset it to use the real clock.",
            details={"variable": knob.name},
        )
    return CroftError(
        "KNOB_INVALID",
        f"{knob.name}={shown!r} is not a value croft can use ({knob.meaning}): {why}",
        f"Set {knob.name} to {knob.rule()}, or unset it for the default. `croft docs environment` lists every knob.",
        details={"variable": knob.name, "rule": knob.rule()},
    )
