"""Starting a scheduled run (``croft run --due``) as a detached process with an explicit environment,
and a project tick for a slot handed on (``scheduler.tick.handoff``).

(``scheduler.user.fulltick`` starts the per-user tick's project tick workers, with ``start_tick_worker``.)

The child is ``<this python> -P -m croft run --due --run-id ID A B …`` in the project folder, in its own
session (so the tick, a terminal closing or the OS job's cgroup ending does not take it down), with its
output going to the run's log folder and never to the tick's stdout. Its environment is a croft child's
(``core.children``), never copied: secrets a shell exported are not passed on, and the run reads the
project's ``.env`` itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.children import croft_argv, detach
from croft.core.identity import ProcessIdentity, boot_id, start_time
from croft.core.private import open_append

if TYPE_CHECKING:
    import subprocess
    from typing import IO

__all__ = ["start_due_run", "start_project_tick", "start_tick_worker", "tick_argv"]


def start_due_run(
    root: Path, state_dir: Path, run_id: str, assets: list[str], env: dict[str, str]
) -> ProcessIdentity:
    """Start the detached child; returns its identity. OSError when it cannot be started."""
    log = Path(state_dir) / "logs" / run_id / "process.log"
    argv = croft_argv("run", "--due", "--json", "--run-id", run_id, *assets)
    fd = open_append(log)
    try:
        child = detach(argv, root, fd, env)
    finally:
        os.close(fd)
    # The tick exits soon and init adopts the child; holding the handle keeps Python from warning about it.
    _CHILDREN.append(child)
    return ProcessIdentity(pid=child.pid, start=start_time(child.pid), boot=boot_id())


def tick_argv() -> list[str]:
    """The command of a project tick, run in the project's folder."""
    return croft_argv("tick")


def start_tick_worker(cwd: str, err: IO[bytes], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``croft tick --batch`` (``scheduler.tick.batch``), detached, spoken to through pipes (its
    stderr to ``err``). OSError when it cannot start."""
    return detach([*tick_argv(), "--batch"], cwd, err, env, talk=True)


def start_project_tick(root: str, out: IO[bytes], env: dict[str, str]) -> int:
    """Start ``croft tick`` in ``root``, detached, its output to ``out`` (the tick log, its lines named by
    the project's whole path: the registry that gives short names is not this room's); its pid. OSError
    when it cannot."""
    child = detach([*tick_argv(), "--log-as", root], root, out, env)
    _CHILDREN.append(child)
    return child.pid


_CHILDREN: list[object] = []
