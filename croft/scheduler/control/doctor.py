"""``croft doctor``: every link of the scheduler chain, one line each, with the fix for a broken one.

The links and their order are ``chain.links``, the same ones SCHEDULER_STALE picks its cause from; this
only gathers them for every registered project (and the project doctor runs in) and says whether all hold.
"""

from __future__ import annotations

from croft.core import clock
from croft.core.result import Result
from croft.project.config import Project
from croft.scheduler.control.chain import links
from croft.scheduler.control.gather import user_chain
from croft.scheduler.jobs.oscmd import Runner

__all__ = ["doctor"]

SHOWN_LOG_LINES = 5


def doctor(runner: Runner | None = None, project: Project | None = None) -> Result:
    chain = user_chain(project, clock.now(), runner=runner)
    checks = links(chain)
    ok = all(c.ok for c in checks)
    data = {
        "checks": [c.to_json() for c in checks],
        "logFile": chain.log_file,
        "logTail": list(chain.log[-SHOWN_LOG_LINES:]),
    }
    return Result(data=data, ok=ok, exit=0 if ok else 1)
