"""``croft status``'s Result: the data (``engine.status``) with the scheduler's view, and what stops the
project's scheduling as warnings. One function, so the command and the status page (``croft ui``) can
never tell a different story."""

from __future__ import annotations

from typing import Any

from croft.core import clock
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.engine import status as engine_status
from croft.project.config import Project
from croft.scheduler.control.diagnosis import project_look, stale_warning, theirs_refusal, unsafe_warning
from croft.scheduler.tick.slots import queue_view
from croft.scheduler.tick.view import with_schedule

__all__ = ["status"]


def _waiting(data: dict[str, Any], root: str) -> None:
    """Each asset of a group waiting in the user's queue says what it waits for (``"a slot"`` of the cap
    or ``"pool stripe"``): it is waiting, not failing. A queue croft cannot read adds nothing."""
    try:
        queue = queue_view(croft_home(), clock.now())
    except (CroftError, OSError):
        return
    waits = {a: w["waitingFor"] for w in queue["waiting"] if w["root"] == root for a in w["assets"]}
    for asset in data.get("assets", []):
        if asset["asset"] in waits:
            asset["waitingFor"] = waits[asset["asset"]]


def status(project: Project) -> Result:
    theirs_refusal(project)  # another user's project whose state is hers: say so, not PATH_UNWRITABLE
    # through the module, so a test that replaces engine.status.project_status reaches the command
    result = with_schedule(engine_status.project_status(project), project)
    _waiting(result.data, str(project.root))
    # what stops its scheduling, as warnings: status is about the data, which is there to read
    seen = project_look(project)
    result.problems += [p.with_(severity="warning") for p in seen.problems]
    # the setting the look read and the view's heartbeat, each read once (a setting the look could not
    # read is read again, and its problem raised, as each warning always did)
    setting = seen.setting
    # the scheduler skips this project: files others could change
    unsafe = unsafe_warning(project, setting=setting)
    if unsafe:
        result.problems.append(unsafe)
    # scheduling on but nothing ticked for 3 minutes: say so, and why
    stale = stale_warning(project, setting=setting, beat=result.data["scheduling"]["heartbeatAt"])
    if stale:  # an error, so exit 1 as SCHEDULER_STALE's page says (a non-zero exit always names why)
        result.problems.append(stale.with_(severity="error"))
        result.ok = False
    return result
