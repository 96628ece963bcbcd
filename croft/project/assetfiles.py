"""Which files under ``assets/`` are assets: every ``.py`` and ``.sql`` file, one table named after each.

Apart from reading an asset's facts (``project.discovery``), so a command that only needs the names (an
asset named on the command line, ``croft logs NAME`` with no history yet) reads no asset's text.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SUFFIXES", "asset_files", "asset_names"]

SUFFIXES = (".py", ".sql")
_IGNORED_PARTS = ("__pycache__",)


def asset_files(folder: Path) -> list[Path]:
    """``.py`` and ``.sql`` files under ``folder``, sorted; hidden files/folders, ``__pycache__`` and
    ``__init__.py`` (package markers, not assets) are skipped."""
    if not folder.is_dir():
        return []
    found = []
    for path in folder.rglob("*"):
        parts = path.relative_to(folder).parts
        if any(part.startswith(".") or part in _IGNORED_PARTS for part in parts):
            continue
        if path.suffix in SUFFIXES and path.name != "__init__.py" and path.is_file():
            found.append(path)
    return sorted(found)


def asset_names(root: Path) -> set[str]:
    """The names of the project's assets as their files give them (``discovery.discover`` checks them)."""
    return {path.stem for path in asset_files(root / "assets")}
