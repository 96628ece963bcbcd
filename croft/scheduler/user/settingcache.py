"""The per-user tick's memory of each project's scheduling setting, keyed by the state files' stat.

Opening 100 SQLite files every minute costs more than the rest of the per-user tick together. A
project whose runs.sqlite (and its WAL) has not changed since the last minute cannot have a different
setting, so the setting read then is used again; any write to runs.sqlite changes the key and the file
is read afresh through ``read_scheduling_file``, the one reader. The cache is a hint: unreadable or
missing, it is simply rebuilt.
"""

from __future__ import annotations

import contextlib
import os
from json import dumps, loads
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from croft.scheduler.setting import Scheduling

__all__ = ["HintFile", "SettingCache"]


def _stamp(state_dir: Path) -> list[int] | None:
    out: list[int] = []
    for name in ("runs.sqlite", "runs.sqlite-wal"):
        try:
            st = os.stat(state_dir / name)
        except FileNotFoundError:
            out += [0, 0, 0]
            continue
        except OSError:
            return None
        # an empty WAL holds nothing (a reader may create one): the same as none; the mode is in the key
        # so a chmod that makes the file unreadable is looked at, not answered from the cache
        out += [st.st_mtime_ns, st.st_size, st.st_mode] if st.st_size or name == "runs.sqlite" else [0, 0, 0]
    return out


class HintFile:
    """A per-user JSON file of per-project entries the per-user tick keeps between minutes. A hint only:
    unreadable or missing, it starts empty; written back (temp + rename) only when it changed, without
    the projects no longer looked at. Its path is kept as text: read every minute, without pathlib."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self.changed = False
        self._entries: dict[str, object] | None = None
        self.seen: set[str] = set()

    @property
    def entries(self) -> dict[str, object]:
        """Read at the first look (a minute whose projects all beat idle never reads the setting cache)."""
        if self._entries is None:
            try:
                with open(self.path, encoding="utf-8") as f:
                    raw = loads(f.read())
                self._entries = raw if isinstance(raw, dict) else {}
            except (OSError, ValueError, RecursionError):
                self._entries = {}
        return self._entries

    def save(self) -> None:
        if self._entries is None:  # never looked at: nothing to keep or to drop
            return
        kept = {k: v for k, v in self.entries.items() if k in self.seen}
        if not self.changed and len(kept) == len(self.entries):  # the same entries, none dropped
            return
        folder, name = os.path.split(self.path)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)  # a stale one, or a link at its name: never written through
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(dumps(kept))
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


class SettingCache(HintFile):
    def read(self, state_dir: Path) -> Scheduling:
        from croft.scheduler.setting import Scheduling, read_scheduling_file

        key = str(state_dir)
        self.seen.add(key)
        stamp = _stamp(state_dir)
        cached = self.entries.get(key)
        if stamp is not None and isinstance(cached, dict) and cached.get("stamp") == stamp:
            return Scheduling.from_json(cached.get("setting"))
        setting = read_scheduling_file(state_dir)
        if stamp is not None and _stamp(state_dir) == stamp:  # nothing wrote while we read
            self.entries[key] = {"stamp": stamp, "setting": setting.to_json()}
            self.changed = True
        return setting
