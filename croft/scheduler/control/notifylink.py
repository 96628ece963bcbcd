"""Doctor's notifications line of one project, decided from facts ``control.notifying`` gathered: a
warning (NOTIFY_FAILING) when a message croft would send cannot arrive.

Apart from the gathering (which asks the desktop and reads notify.log), so the chain that words every
link (``control.chain``) loads neither.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from croft.scheduler.jobs.health import Link

if TYPE_CHECKING:
    from typing import Any

    from croft.notify.desktop import Reach
    from croft.notify.log import Logged

__all__ = ["CODE", "Notifying", "notify_link"]

CODE = "NOTIFY_FAILING"


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
