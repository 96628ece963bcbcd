"""The per-user tick's idle beat: a project whose idle memo holds gets its heartbeat without a process.

Starting an interpreter per project per minute, or even opening each project's runs.sqlite (WAL mode:
creating and removing its -wal and -shm files costs ~1 ms of CPU), would make an idle ``croft tick
--all`` over 100 projects cost several times what the target allows. So:

- the decision is the project tick's own: ``scheduler.tick.memo.memo_holds`` (the memo a full tick left, the
  setting, croft.json, the history and file fingerprints, the clock inside the memo's window);
- once it held, the per-user tick remembers the ``stat`` of everything that check read (runs.sqlite and
  its WAL, croft.json, the asset files and their local imports) with the memo's window, in
  ``<CROFT_HOME>/idle-cache.json``. While every stat is the same and the clock is inside the window, the
  check's inputs are the same, so its answer is too; any write to runs.sqlite, croft.json or an asset
  file moves a stat and the check runs again. A stamp taken within ``RACY_NS`` of a file's mtime is not
  trusted (a second write in the same clock tick could leave the mtime as it was);
- a project whose croft.json sets ``notify.ping`` is never beaten here: its ping goes out after each
  project tick, which only its own tick process sends;
- the heartbeat of such a minute goes to ``<state>/tick-beat`` (one small file), not to runs.sqlite, so
  the stamps stay still (the beat file is not part of them). ``heartbeat.last_heartbeat`` reads the later of it and the tick row.

Imports only ``os`` (and the idle check when a stamp moved): it runs every minute.
"""

from __future__ import annotations

import os
import time

from croft.scheduler.incidents import incident_path
from croft.scheduler.user.settingcache import HintFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["IdleCache"]

RACY_NS = 50_000_000  # 50 ms: well above any filesystem clock tick


def _stamp(root: str, state_dir: str, deps: list[str], home: str) -> tuple[str, bool] | None:
    """(one value for the stats of what the idle check reads, whether it is safe to compare later);
    None: something could not be read."""
    from zlib import crc32

    from croft.scheduler.tick.filekeys import asset_paths

    paths = [
        f"{state_dir}/runs.sqlite",
        f"{state_dir}/runs.sqlite-wal",
        incident_path(root, home),  # a failed tick since: the idle check must run again (it will not hold)
        f"{root}/croft.json",
        *asset_paths(f"{root}/assets"),
        *(f"{root}/{rel}" for rel in sorted(set(deps))),
    ]
    racy = time.time_ns() - RACY_NS
    stats: list[tuple[int, int, int, int] | None] = []
    safe = True
    for path in paths:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            stats.append(None)
            continue
        except OSError:
            return None
        stats.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode))  # mode: a chmod is a change too
        if st.st_mtime_ns > racy:
            safe = False
    text = repr((paths, stats))
    return f"{crc32(text.encode()):08x}:{len(text)}", safe


class IdleCache(HintFile):
    """``<CROFT_HOME>/idle-cache.json``: per project root, the stamp and window of its last idle check
    that held. The state folder is always ``<root>/.croft``: the idle check never holds for a relocated
    one."""

    def __init__(self, path: Path):
        super().__init__(path)
        self._before: dict[str, tuple[str, bool] | None] = {}
        self._home = str(path.parent)  # the cache lives in croft's home, beside the incidents

    def still(self, root: str, now_iso: str) -> bool:
        """Whether nothing the idle check read moved since it last held, and the clock is inside its
        window: then its answer is the same, and the project only needs its heartbeat."""
        self.seen.add(root)
        entry = self.entries.get(root)
        if not isinstance(entry, dict):
            return False
        before = self._before[root] = _stamp(root, f"{root}/.croft", entry["deps"], self._home)  # type: ignore[arg-type]
        return bool(
            entry["safe"]
            and before is not None
            and before[0] == entry["stamp"]
            and entry["at"] <= now_iso < entry["until"]  # type: ignore[operator]
        )

    def check(self, root: str, now_iso: str) -> bool:
        """The idle check itself (``scheduler.tick.memo.memo_holds``, read-only); when it holds, remember what
        it read. For a project whose scheduling is on and ticks through the OS job."""
        from croft.scheduler.tick.memo import memo_holds

        self.seen.add(root)
        self.changed = True
        state_dir = f"{root}/.croft"
        before = (
            self._before.pop(root, None) if root in self.entries else _stamp(root, state_dir, [], self._home)
        )
        memo = memo_holds(root, now_iso)
        # a project that pings keeps its own tick process every minute: the ping goes out after each one
        if memo is None or memo.get("pings", True):
            self.entries.pop(root, None)
            return False
        after = _stamp(root, state_dir, memo["deps"], self._home)
        # Trusted next minute only when nothing moved while the check read (its own closing may have
        # checkpointed the WAL; then the next minute's check, which writes nothing, gives a steady stamp).
        steady = before is not None and after is not None and before[0] == after[0]
        self.entries[root] = {
            "stamp": after[0] if after else None,
            "safe": steady and before is not None and before[1],
            "at": memo["at"],
            "until": memo["until"],
            "deps": memo["deps"],
        }
        return True
