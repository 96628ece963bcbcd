"""The per-user tick's memory of when each project's freshness promises next need a look.

Checking a promise reads the project's facts and history: too much for every project every minute. A
promise can only break at a known instant (the earliest ``breach_at``) unless its facts change, and
every change that matters writes runs.sqlite (a run, a setting, a told breach) or croft.json. So each
project's entry holds that instant and the ``stat`` of those files: while both hold, the idle minute
costs three ``stat`` calls. An asset file edited in place (a new ``fresh_within``) is seen at the next
write of runs.sqlite (its run, or the tick's facts cache) or within ``RECHECK_S`` at the latest.

Imports only ``os``, the clock and the hint file: it runs every minute.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from croft.core.clock import to_iso  # loaded by both per-user tickers already
from croft.scheduler.user.settingcache import HintFile

if TYPE_CHECKING:
    from typing import Any

__all__ = ["RECHECK_S", "STAMPED", "FreshCache", "look"]

RECHECK_S = 3600  # the longest a promise goes unlooked-at while nothing moved


STAMPED = (".croft/runs.sqlite", ".croft/runs.sqlite-wal", "croft.json")  # by their names under the root


def _stamp(root: str, state_dir: str, known: Any = None) -> int | None:
    """One integer for the files' mtimes and sizes (the hash of integers: the same in every process, and
    a thousand of them read back faster than lists); None when one cannot be stat'ed. ``known``: the
    stats the idle stamp took this minute (``idlecache.KEPT``, None for a file that is not there), by name
    under the root, for a project whose state folder is ``<root>/.croft``."""
    if known is None:
        known = {}
        paths = (f"{state_dir}/runs.sqlite", f"{state_dir}/runs.sqlite-wal", f"{root}/croft.json")
        for name, path in zip(STAMPED, paths, strict=True):
            try:
                known[name] = os.stat(path)
            except FileNotFoundError:
                known[name] = None
            except OSError:
                return None
    out: list[int] = []
    for name in STAMPED:
        st = known[name]
        if st is None or (not st.st_size and name.endswith("-wal")):
            out += [0, 0]  # an empty WAL holds nothing (a reader may create one): the same as none
        else:
            out += [st.st_mtime_ns, st.st_size]
    return hash(tuple(out))


def _any_promise(root: str, state_dir: str) -> bool:
    """Whether an asset file's text mentions a freshness promise (``fresh_within``, ``-- fresh within:``)
    or a breach was told and not yet ended (``notify.freshness``): files read as text, one read-only
    query, no asset parsed and no WAL created. Only a yes pays for the full look."""
    from croft.history.peek import peek
    from croft.scheduler.tick.filekeys import asset_paths

    for path in asset_paths(f"{root}/assets"):
        try:
            with open(path, "rb") as handle:
                text = handle.read()
        except OSError:
            return True  # unreadable: the full look says what it can
        if b"fresh_within" in text or b"fresh within" in text:
            return True
    rows = peek(
        f"{state_dir}/runs.sqlite",
        "SELECT 1 FROM settings WHERE key = 'notify.freshness' AND value NOT IN ('{}', 'null')",
    )
    return bool(rows)


class FreshCache(HintFile):
    """``<CROFT_HOME>/fresh-cache.json``: per project root, ``{"stamp": int, "next": ISO}``."""

    def due(self, root: str, state_dir: str, now_iso: str, known: Any = None) -> int | bool | None:
        """False while nothing moved and the next look is still ahead; else the stamp to ``remember``
        after the look (None when the files cannot be stat'ed: look, and remember nothing)."""
        self.seen.add(root)
        stamp = _stamp(root, state_dir, known)
        entry = self.entries.get(root)
        if stamp is not None and isinstance(entry, dict) and entry.get("stamp") == stamp:
            ahead = entry.get("next")
            if isinstance(ahead, str) and now_iso < ahead:
                return False
        return stamp

    def remember(self, root: str, stamp: int | None, next_iso: str) -> None:
        if stamp is None:
            self.entries.pop(root, None)
        else:
            self.entries[root] = {"stamp": stamp, "next": next_iso}
        self.changed = True


def look(
    cache: FreshCache,
    root: str,
    state_dir: str,
    now: Any,
    note: Any,
    now_iso: str | None = None,
    known: Any = None,
) -> None:
    """The freshness watch of one project (``scheduler.user.freshwatch``), only when its next look has
    come or what it reads moved; never raises (a failed look is one note, and is tried within the hour).
    ``known``: stats of its files taken this minute (the idle stamp's), not taken again."""
    stamp = cache.due(root, state_dir, now_iso or to_iso(now), known)  # the caller's text: to_iso is not free
    if stamp is False:
        return
    from datetime import timedelta

    if not _any_promise(root, state_dir):  # the usual project: nothing promised, nothing told; no facts read
        cache.remember(root, stamp, to_iso(now + timedelta(seconds=RECHECK_S)))
        return
    from croft.scheduler.user.freshwatch import watch  # lazy: the look reads facts and history

    try:
        after = watch(root, now, RECHECK_S)
    except Exception as exc:
        note(f"{root}: freshness not checked: {type(exc).__name__}: {exc}")
        after = to_iso(now + timedelta(seconds=RECHECK_S))
    moved = _stamp(root, state_dir)
    if stamp is not None and moved != stamp:
        # something wrote while we looked (or our own read touched the WAL): keep what the files are now,
        # and look once more next minute, so a write we raced is never missed for longer
        stamp = moved
        after = min(after, to_iso(now + timedelta(seconds=60)))
    cache.remember(root, stamp, after)
