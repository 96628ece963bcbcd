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
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.children import croft_argv, detach
from croft.core.identity import ProcessIdentity, boot_id, start_time
from croft.core.private import open_append
from croft.scheduler.tick.slotlocks import ENV_NAME, Lock, env_value

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from typing import IO

__all__ = ["start_due_run", "start_project_tick", "start_tick_worker", "tick_argv"]


def start_due_run(
    root: Path,
    state_dir: Path,
    run_id: str,
    assets: list[str],
    env: dict[str, str],
    locks: Sequence[Lock] = (),
    *,
    after_me: bool = False,
) -> ProcessIdentity:
    """Start the detached child holding ``locks`` (its slots, ``scheduler.tick.slotlocks``); returns its
    identity. OSError when it cannot be started.

    ``after_me``: this process is a scheduled run handing its slots on: the child is a launcher that
    becomes the run only once this process has exited (``_AFTER``), so the two never run at once."""
    log = Path(state_dir) / "logs" / run_id / "process.log"
    argv = croft_argv("run", "--due", "--json", "--run-id", run_id, *assets)
    env = {**env, ENV_NAME: env_value(list(locks))} if locks else env
    keep = tuple(lock.fd for lock in locks)
    fd = open_append(log)
    try:
        start = _after_me if after_me else _now
        child = start(argv, root, fd, env, keep)
    finally:
        os.close(fd)
    # The tick exits soon and init adopts the child; holding the handle keeps Python from warning about it.
    _CHILDREN.append(child)
    return ProcessIdentity(pid=child.pid, start=start_time(child.pid), boot=boot_id())


# The launcher of a run started by a run that ends: it reads the run's command from its stdin, which
# reaches its end only when the starting run exits (that process holds the only writing end), then
# becomes that command in place (same process, same slots). Until then it is not a `croft run`.
_AFTER = (
    "import os\n"
    "data = b''\n"
    "while chunk := os.read(0, 65536):\n"
    "    data += chunk\n"
    "argv = [os.fsdecode(part) for part in data.split(b'\\0')]\n"
    "os.dup2(os.open(os.devnull, os.O_RDONLY), 0)\n"
    "os.execv(argv[0], argv)\n"
)


def _after_me(
    argv: list[str], root: Path, out: int, env: dict[str, str], keep: tuple[int, ...]
) -> subprocess.Popen[bytes]:
    read, write = os.pipe()  # neither end is inherited by anything else this process starts
    try:
        child = detach([sys.executable, "-S", "-c", _AFTER], root, out, env, keep=keep, stdin=read)
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)
    os.write(write, b"\0".join(os.fsencode(part) for part in argv))
    _WAITING.append(write)  # closed by this process's exit, and only then
    return child


_WAITING: list[int] = []


def _now(
    argv: list[str], root: Path, out: int, env: dict[str, str], keep: tuple[int, ...]
) -> subprocess.Popen[bytes]:
    return detach(argv, root, out, env, keep=keep)


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
