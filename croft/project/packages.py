"""The installed versions of the third-party packages an asset imports, part of its code hash.

Read from the environment's distribution metadata (``importlib.metadata``), whose import and index are
the dear part of a hash: ``project.fingerprint`` loads this module only for an asset that imports a
package from outside the standard library, croft and the project, so a command over assets that import
none (most SQL and plain-Python projects) never reads the index.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Mapping, Sequence

__all__ = ["package_version", "versions_of"]

_DISTS_CACHE: dict[tuple[str, ...], Mapping[str, Sequence[str]]] = {}


def versions_of(module: str) -> list[str]:
    """``dist==version`` of each installed distribution that provides top-level ``module`` (sorted), or
    ``["not installed"]``: what the code hash feeds for one third-party import."""
    dists = _distributions_of(module)
    return [f"{dist}=={package_version(dist)}" for dist in sorted(set(dists))] or ["not installed"]


def package_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or None when it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _distributions_of(module: str) -> Sequence[str]:
    """Distributions providing top-level ``module``; the (slow) mapping is read once per ``sys.path``."""
    key = tuple(sys.path)
    mapping = _DISTS_CACHE.get(key)
    if mapping is None:
        mapping = importlib.metadata.packages_distributions()
        _DISTS_CACHE[key] = mapping
    return mapping.get(module, ())
