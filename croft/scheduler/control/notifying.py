"""The notifications line of ``croft doctor``, one per project: what its croft.json asks to be told by,
whether the desktop can be reached the way a scheduled run reaches it, and the last delivery and the
last miss in its ``notify.log``.

A notification that cannot be shown fails quietly into notify.log (it must never fail a run), so this
is where a person learns of it: a desktop that cannot be reached while ``notify.desktop`` is on, or a
channel whose last try failed, is a warning (NOTIFY_FAILING), never a ✔. It is only a warning: the
scheduler still runs, so doctor's exit and SCHEDULER_STALE's cause do not change. ``gather_notifying`` (I/O) reads
the facts for doctor only; ``control.notifylink`` decides from them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from croft.core.problems import CroftError
from croft.notify.desktop import Reach, reach
from croft.notify.log import DRY_ENV, host_of, is_dry, last_outcomes, scrub_urls
from croft.project.config import load_project
from croft.scheduler.control.notifylink import Notifying

__all__ = ["gather_notifying"]

_OWN = ("desktop", "webhook", "secret", "ping")  # the keys said in their own words; others as written


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
