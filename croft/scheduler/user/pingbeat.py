"""The minute's dead-man's-switch pings of idle projects: sent by whichever settled the minute.

A project with ``notify.ping`` is pinged every minute, idle or not. The full per-user tick
(``user.tick_all``) sends the pings of the projects it beat and ticked; a minute the minute gate settled
(``user.gate``: every project only beaten, nothing changed) owes the same pings, which the last full
minute wrote in the gate's part of the wake file (``user.wakefile``), and the gate's two callers (the OS
job's ``cli/minute.py``, run without ``site``, and ``cli/main.py``, both through ``user.settled``) send
them here. One way for both, so a miss reads the same in the project's ``notify.log`` whoever sent it.

Only the standard library and croft: the OS job's process has no site-packages on its path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from croft.notify.ping import ping_many

__all__ = ["ping_all", "ping_owed"]


def ping_all(pings: Sequence[tuple[str, str]]) -> list[bool]:
    """Ping each ``(url, state folder)`` side by side (``notify.ping.ping_many``); a miss is one redacted
    line in that project's ``notify.log``. Never raises; True for each ping that answered."""
    return ping_many([(url, state, _redactor_of(state)) for url, state in pings])


def ping_owed(owed: str) -> bool:
    """Send the pings a settled minute owes, as the gate gave them (the wake file's line: a JSON list of
    ``[url, state folder]``); whether it could. False, having sent none, when that line is not what croft
    writes: the caller hands the minute to the full tick, which pings itself."""
    try:
        found = json.loads(owed)
    except ValueError:
        return False
    if not isinstance(found, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p) for p in found
    ):
        return False
    ping_all([(url, state) for url, state in found])
    return True


def _redactor_of(state_dir: str) -> Callable[[], Any]:
    """Only for a ping that failed: the project's redactor, for its notify.log line."""

    def redactor() -> Any:
        from croft.scheduler.tick.memo import project_redactor  # lazy: a ping that answered needs none

        return project_redactor(os.path.dirname(state_dir))

    return redactor
