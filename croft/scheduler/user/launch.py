"""Starting one registered project's tick (``<interpreter> -m croft tick`` in its folder), for the per-user
tick and serve.

The child is detached (its own session, so the OS job ending does not take it along), its output goes
to the tick log (every line naming its project), and its environment is a croft child's (``core.children``): never the whole
environment of whoever started the job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from croft.core.children import detach
from croft.scheduler.tick.start import tick_argv

if TYPE_CHECKING:
    import subprocess
    from typing import IO

__all__ = ["spawn_tick"]


def spawn_tick(root: str, log: IO[bytes], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    """Start ``croft tick`` in ``root``, its lines in the tick log named ``name`` (``ticklog.project_names``);
    returns at once. Raises OSError when it cannot start."""
    return detach([*tick_argv(), "--log-as", name], root, log, env)
