"""Asset files as the tick sees them: a sorted listing and ``stat`` keys, with nothing but ``os``.

Both the facts cache (is this file's key the one its facts were read under?) and the idle tick (has any
asset file, or a module one imports, changed since the last full tick?) use these, so "changed" means
one thing.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable

__all__ = ["asset_paths", "asset_tree", "files_fingerprint", "stat_text"]

_SUFFIXES = (".py", ".sql")


def asset_paths(folder: str) -> list[str]:
    """``assets/**/*.py|.sql`` as discovery sees them (hidden entries, ``__pycache__`` and ``__init__.py``
    left out), as sorted path strings found with ``os.scandir``: the listing costs no parse."""
    return asset_tree(folder)[1]


def asset_tree(folder: str) -> tuple[list[str], list[str]]:
    """(the folders walked, the asset files in them), each sorted. A file added, removed or renamed moves
    the stat of the folder it is in, so the per-user tick can watch a listing without listing it."""
    found: list[str] = []
    folders: list[str] = []
    todo = [folder]
    while todo:
        current = todo.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        folders.append(current)
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name == "__pycache__":
                continue
            if entry.is_dir(follow_symlinks=True):
                todo.append(entry.path)
            elif name.endswith(_SUFFIXES) and name != "__init__.py" and entry.is_file():
                found.append(entry.path)
    found.sort()
    folders.sort()
    return folders, found


def stat_text(path: str) -> str:
    """``size:mtime_ns`` of a file, or ``gone``."""
    try:
        st = os.stat(path)
    except OSError:
        return "gone"
    return f"{st.st_size}:{st.st_mtime_ns}"


def files_fingerprint(root: str, deps: Iterable[str]) -> str:
    """One value for the whole asset folder: every asset file's path and stat, and the stat of each
    project-local module (``deps``, relative to ``root``) the assets imported when last read."""
    crc = 0
    for path in asset_paths(os.path.join(root, "assets")):
        crc = zlib.crc32(f"{path}={stat_text(path)}\n".encode(), crc)
    for rel in sorted(set(deps)):
        crc = zlib.crc32(f"{rel}={stat_text(os.path.join(root, rel))}\n".encode(), crc)
    return f"{crc:08x}"
