"""Import one asset's code, in isolation, only inside a run or preview a person or the scheduler started.

Each load gets a fresh module name. The project root is never put on ``sys.path``: in a shared project
the group may write the root, and a ``json.py`` dropped there would shadow the standard library in every
run. Assets are loaded by path; the one top-level name a project owns, ``lib`` (``rules.LOCAL_PACKAGES``,
the rule the code fingerprint shares), is found in the project root by a finder placed first on
``sys.meta_path``; every other name is the interpreter's. An exception while importing is the asset's
error (``ASSET_CODE_ERROR``), reported with the line in the asset's files where it happened.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from croft.core.problems import CroftError
from croft.project.rules import LOCAL_PACKAGES

__all__ = ["ProjectPackages", "code_error", "load_asset_function"]


class ProjectPackages:
    """A ``sys.meta_path`` finder for ``lib`` of one project root, and nothing else."""

    def __init__(self, root: str):
        self.root = root

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        if fullname not in LOCAL_PACKAGES:
            return None  # submodules come from their package's __path__; everything else is not ours
        return importlib.machinery.PathFinder.find_spec(fullname, [self.root])


def _serve_packages(root: str) -> None:
    """Put this project's finder first (once), replacing one of another root a long process left."""
    for index, finder in enumerate(sys.meta_path):
        if isinstance(finder, ProjectPackages):
            if finder.root == root and index == 0:
                return
            sys.meta_path.pop(index)
            break
    sys.meta_path.insert(0, ProjectPackages(root))


def code_error(exc: BaseException, asset: str, root: Path, phase: str) -> CroftError:
    """Turn an exception raised by user code into ASSET_CODE_ERROR pointing at the user's own line."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if f.filename.startswith(str(root))]
    where = mine[-1] if mine else (frames[-1] if frames else None)
    location = {}
    if where is not None:
        try:
            rel = str(Path(where.filename).relative_to(root))
        except ValueError:
            rel = where.filename
        location = {"file": rel, "line": where.lineno}
    at = f" at {location['file']}:{location['line']}" if location else ""
    return CroftError(
        "ASSET_CODE_ERROR",
        f"{asset}: {type(exc).__name__} while {phase}{at}: {exc}",
        "Fix the code, then try it with `croft preview " + asset + "` before `croft run " + asset + "`.",
        asset=asset,
        details={"exception": type(exc).__name__, "phase": phase, **location},
        **({"file": location["file"], "line": location["line"]} if location else {}),
    )


def load_asset_function(root: Path, name: str, path: Path) -> Callable[..., Any]:
    """Import ``path`` and return the function its @ingest/@transform decorator marked."""
    _serve_packages(str(root))
    module_name = f"croft_asset_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # sys.exit() at import time is the asset's error, not croft's exit
        raise code_error(exc, name, root, "importing the asset") from exc
    for value in vars(module).values():
        if callable(value) and isinstance(getattr(value, "__croft__", None), dict):
            return value
    raise CroftError(
        "ASSET_INVALID",
        f"{path.name} defines no function decorated with @ingest(...) or @transform(...)",
        'Decorate the function that yields rows, e.g. `@ingest(schedule="every hour")` above `def rows(ctx):`.',
        asset=name,
    )
