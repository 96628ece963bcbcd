"""Import one asset's code, in isolation, only inside a run or preview a person or the scheduler started.

Each load gets a fresh module name, and the project root is put first on ``sys.path`` so ``import lib.x``
finds the project's own shared code. An exception while importing is the asset's error
(``ASSET_CODE_ERROR``), reported with the line in the asset's files where it happened.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from croft.core.problems import CroftError

__all__ = ["code_error", "load_asset_function"]


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
    root_text = str(root)
    if sys.path[:1] != [root_text]:
        sys.path.insert(0, root_text)
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
