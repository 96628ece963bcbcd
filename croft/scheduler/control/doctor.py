"""``croft doctor``: every link of the scheduler chain, one line each, with the fix for a broken one.

The links and their order are ``chain.links``, the same ones SCHEDULER_STALE picks its cause from; this
only gathers them for every registered project (and the project doctor runs in) and says whether all hold.
"""

from __future__ import annotations

from croft.core import clock
from croft.core.problems import Problem, problem
from croft.core.result import Result
from croft.engine.tablehealth import project_problems
from croft.project.config import Project
from croft.project.validate import channel_problems
from croft.scheduler.control.chain import links
from croft.scheduler.control.diagnosis import theirs_refusal
from croft.scheduler.control.doctorchain import user_chain
from croft.scheduler.jobs.health import Link
from croft.scheduler.jobs.oscmd import Runner
from croft.scheduler.tick.freshview import add_freshness

__all__ = ["broken_problem", "doctor", "warning_problem"]

SHOWN_LOG_LINES = 5


def doctor(runner: Runner | None = None, project: Project | None = None) -> Result:
    if project is not None:
        theirs_refusal(project)  # another user's project whose state is hers: say so, not PATH_UNWRITABLE
    chain = user_chain(project, clock.now(), runner=runner)
    checks = links(chain)
    ok = all(c.ok for c in checks)
    data = {
        "checks": [c.to_json() for c in checks],
        "logFile": chain.log_file,
        "logTail": list(chain.log[-SHOWN_LOG_LINES:]),
    }
    problems = [broken_problem(c) for c in checks if not c.ok]  # a non-zero exit always says why
    problems += [warning_problem(c) for c in checks if c.warn]
    data["notifications"] = [
        {"root": p.root, **p.notifying.to_json()} for p in chain.places if p.notifying is not None
    ]
    result = Result(data=data, problems=problems, ok=ok, exit=0 if ok else 1)
    if project is not None:  # the project's alerts: channels that cannot send, promises broken
        result.problems.extend(channel_problems(project))
        result.problems.extend(project_problems(project))  # tables changed outside croft
        add_freshness(result, project, clock.now())
    return result


def broken_problem(link: Link) -> Problem:
    """A broken link as the problem doctor reports it: its own code when it has one (DISK_FULL,
    HISTORY_CORRUPT, CONFIG_INVALID...), else SCHEDULER_BROKEN, with doctor's words and its fix."""
    fix = None if link.fix is None else {"kind": "command", "command": link.fix, "description": link.detail}
    return problem(
        link.code or "SCHEDULER_BROKEN",
        f"{link.check}: {link.detail}",
        "Scheduled ingests that depend on this link do not run until it is repaired"
        + (": the fix does it." if fix else "; `croft docs scheduler` explains the chain."),
        fix=fix,
        details={"check": link.check, "cause": link.cause},
    )


def warning_problem(link: Link) -> Problem:
    """A link that holds but warns (a desktop croft cannot reach): its own code, hint and fix."""
    fix = None if link.fix is None else {"kind": "command", "command": link.fix, "description": link.detail}
    return problem(
        link.code or "SCHEDULER_BROKEN",
        f"{link.check}: {link.detail}",
        link.hint or "",
        fix=fix,
        severity="warning",
        details={"check": link.check, "cause": link.cause},
    )
