"""The notifications line of ``croft doctor``, one per project: what its croft.json asks to be told by,
whether the desktop can be reached the way a scheduled run reaches it, and the last delivery and the
last miss in its ``notify.log``.

A notification that cannot be shown fails quietly into notify.log (it must never fail a run), so this
is where a person learns of it: a desktop that cannot be reached while ``notify.desktop`` is on, or a
channel whose last try failed, is a warning (NOTIFY_FAILING), never a ✔. It is only a warning: the
scheduler still runs, so doctor's exit and SCHEDULER_STALE's cause do not change. ``gather_notifying`` (I/O) reads
the facts for doctor only; ``notify_link`` decides from them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from croft.core.problems import CroftError
from croft.notify.desktop import Reach, reach
from croft.notify.log import DRY_ENV, Logged, host_of, is_dry, last_outcomes, scrub_urls
from croft.project.config import load_project
from croft.scheduler.jobs.health import Link

__all__ = ["CODE", "Notifying", "gather_notifying", "notify_link"]

CODE = "NOTIFY_FAILING"
_OWN = ("desktop", "webhook", "secret", "ping")  # the keys said in their own words; others as written


@dataclass(frozen=True)
class Notifying:
    """One project's notification facts, as ``gather`` found them."""

    configured: tuple[str, ...] = ()  # "desktop", "webhook example.com (signed)", "ping hc-ping.com", ...
    desktop: bool = False
    webhook: str | None = None  # the webhook's host
    reach: Reach | None = None  # the desktop as a scheduled run of this project meets it (desktop on only)
    here: Reach | None = None  # the same from doctor's own shell, when that differs
    last_sent: Logged | None = None
    last_miss: Logged | None = None
    unreadable: str | None = None  # why croft.json could not be read (its own link says more)

    def to_json(self) -> dict[str, Any]:
        desktop = None
        if self.reach is not None:
            desktop = {"reachable": self.reach.ok, "said": self.reach.said, "cause": self.reach.cause}
        return {
            "configured": list(self.configured),
            "desktop": desktop,
            "lastSent": self.last_sent.to_json() if self.last_sent else None,
            "lastFailure": self.last_miss.to_json() if self.last_miss else None,
        }


def gather_notifying(root: str, via: str | None, seen: dict[bool, Reach]) -> Notifying:
    """Read one project's notification facts (croft.json, notify.log, the desktop); ``seen`` keeps the
    desktop's answers for the next project (they are the user's, not the project's)."""
    try:
        project = load_project(Path(root))
        raw = project.config.raw.get("notify") or {}
        redact = project.redactor.text
    except (CroftError, OSError) as exc:
        why = exc.problem.message if isinstance(exc, CroftError) else str(exc)
        return Notifying(unreadable=why)
    config = project.config
    last_sent, last_miss = last_outcomes(config.state_dir, keep=lambda text: not text.startswith("ping "))
    facts = Notifying(
        configured=tuple(redact(word) for word in _configured(raw, config.notify_desktop)),
        desktop=bool(config.notify_desktop),
        webhook=host_of(config.notify_webhook) if config.notify_webhook else None,
        last_sent=last_sent,
        last_miss=last_miss,
    )
    if not facts.desktop:
        return facts
    if is_dry():  # the desktop's messages go to a file, as the sender does with this knob: nothing to reach
        return replace(facts, reach=Reach(True, f"recorded in notifications.ndjson, not shown ({DRY_ENV}=1)"))
    job = via != "serve"  # croft serve runs in a person's shell and hands its session on; the OS job does not
    found = _asked(seen, job)
    here = _asked(seen, False) if job and not found.ok else None
    return replace(facts, reach=found, here=here if here is not None and here.ok else None)


def _asked(seen: dict[bool, Reach], job: bool) -> Reach:
    if job not in seen:
        seen[job] = reach(job=job)
    return seen[job]


def _configured(raw: dict[str, Any], desktop: bool) -> list[str]:
    words = ["desktop" if desktop else "desktop off"]
    if "desktop" not in raw and desktop:
        words[0] = "desktop (the default)"
    if isinstance(raw.get("webhook"), str):
        words.append(f"webhook {host_of(raw['webhook'])}" + (" (signed)" if raw.get("secret") else ""))
    if isinstance(raw.get("ping"), str):
        words.append(f"ping {host_of(raw['ping'])}")
    for key in sorted(k for k in raw if k not in _OWN and raw[k] is not None):
        value = raw[key]
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        words.append(f"{key} {scrub_urls(shown)}")
    return words


def notify_link(root: str, facts: Notifying, via: str | None) -> Link:
    """The line doctor shows; a warning (NOTIFY_FAILING) when a message croft would send cannot arrive."""
    name = f"notifications {root}"
    if facts.unreadable is not None:
        return Link.holds(
            name, f"croft.json cannot be read, so neither can its notify settings: {facts.unreadable}"
        )
    said = _said(facts)
    found = facts.reach
    if found is not None and not found.ok:
        fix, hint = _repair(root, found, facts.here, via)
        detail = f"{said}; the desktop cannot be reached: {found.said}"
        return Link.warns(name, detail, f"desktop_{found.cause}", fix, hint, code=CODE)
    failed = _failing(facts)
    if failed is not None:
        hint = (
            "The last notification croft tried on this channel did not arrive; notify.log (in the project's"
            " .croft/logs) has every miss, and the next message that goes out clears this. Once it is fixed,"
            f" `croft notify test --project {shlex.quote(root)}` sends every channel a test message now."
        )
        return Link.warns(name, f"{said}; the last try failed", "last_failed", None, hint, code=CODE)
    return Link.holds(name, said)


def _said(facts: Notifying) -> str:
    parts = [", ".join(facts.configured)]
    if facts.reach is not None and facts.reach.ok:
        parts.append(f"desktop {facts.reach.said}")
    sent, miss = facts.last_sent, facts.last_miss
    parts.append(f"last sent {sent.at}: {sent.text}" if sent else "nothing sent yet")
    parts.append(f"last failure {miss.at}: {miss.text}" if miss else "no failure logged")
    return "; ".join(parts)


def _failing(facts: Notifying) -> Logged | None:
    """The last miss, when it is newer than the last delivery and of a channel that is still on."""
    miss = facts.last_miss
    if miss is None or (facts.last_sent is not None and facts.last_sent.order > miss.order):
        return None
    if miss.text.startswith("desktop") and facts.desktop:
        return miss
    if facts.webhook and miss.text.startswith(f"webhook {facts.webhook}"):
        return miss
    return None


def _repair(root: str, found: Reach, here: Reach | None, via: str | None) -> tuple[str | None, str]:
    """(a command that makes the desktop reachable, or None where only the settings can; the hint)."""
    off = (
        'On a machine with no desktop session, set "notify": {"desktop": false} in croft.json and give a'
        ' "webhook" to be told there instead (croft docs notifications).'
    )
    if found.cause == "no_sender":
        return found.fix, f"Install notify-send, which shows croft's desktop notifications. {off}"
    if here is not None and via != "serve":
        command = f"croft schedule on --no-os-job --project {shlex.quote(root)}"
        return command, (
            "This shell has a session bus, but a job cron or launchd starts cannot find it. Tick the"
            " project from croft serve, started in this desktop session: the fix turns that on; then keep"
            " `croft serve` running."
        )
    return None, (
        "Desktop notifications of scheduled runs fail into notify.log until the desktop can be reached."
        f" {off}"
    )
