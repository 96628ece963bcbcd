"""``croft status``'s Result: the data (``engine.status``) with the scheduler's view, and what stops the
project's scheduling as warnings. One function, so the command and the status page (``croft ui``) can
never tell a different story."""

from __future__ import annotations

from croft.core.result import Result
from croft.engine import status as engine_status
from croft.project.config import Project
from croft.scheduler.control.diagnosis import project_troubles, stale_warning, unsafe_warning
from croft.scheduler.tick.view import with_schedule

__all__ = ["status"]


def status(project: Project) -> Result:
    # through the module, so a test that replaces engine.status.project_status reaches the command
    result = with_schedule(engine_status.project_status(project), project)
    # what stops its scheduling, as warnings: status is about the data, which is there to read
    result.problems += [p.with_(severity="warning") for p in project_troubles(project)]
    unsafe = unsafe_warning(project)  # the scheduler skips this project: files others could change
    if unsafe:
        result.problems.append(unsafe)
    stale = stale_warning(project)  # scheduling on but nothing ticked for 3 minutes: say so, and why
    if stale:  # an error, so exit 1 as SCHEDULER_STALE's page says (a non-zero exit always names why)
        result.problems.append(stale.with_(severity="error"))
        result.ok = False
    return result
