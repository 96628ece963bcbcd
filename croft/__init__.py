"""croft: local data pipelines that keep themselves fresh.

This module is the asset author's API and nothing else: ``@ingest(...)`` and ``@transform(...)``. It
imports nothing heavy, because every asset file imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time: every asset and every tick imports this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ingest", "transform"]
__version__ = "0.1.0"

# Who is told, and when (docs/notifications.md): each wins over croft.json's notify for this asset.
ALERT_OPTIONS = ("notify_after", "notify_remind", "run_ping", "fresh_within", "slow_after")
INGEST_OPTIONS = frozenset(
    {
        "schedule", "key", "incremental", "secrets", "checks", "write", "description", "retries", "timeout",
        "max_runtime", "pool", *ALERT_OPTIONS,
    }
)  # fmt: skip
TRANSFORM_OPTIONS = frozenset(
    {"inputs", "key", "checks", "description", "max_runtime", "pool", *ALERT_OPTIONS}
)


def _mark(kind: str, allowed: frozenset[str], options: dict[str, Any]) -> Callable[[F], F]:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"@{kind}() got unknown option(s) {', '.join(unknown)}; allowed: {sorted(allowed)}")

    def decorate(func: F) -> F:
        func.__croft__ = {"kind": kind, **options}  # type: ignore[attr-defined]
        return func

    return decorate


def ingest(**options: Any) -> Callable[[F], F]:
    """Mark ``def rows(ctx)`` as an ingest: a generator yielding dicts (rows) or lists of dicts (batches).

    croft reads these options from the file's text without importing it, so they must be literals.
    """
    return _mark("ingest", INGEST_OPTIONS, options)


def transform(**options: Any) -> Callable[[F], F]:
    """Mark ``def rows(ctx)`` as a Python transform over ``inputs=[...]``, rebuilt in full when stale."""
    return _mark("transform", TRANSFORM_OPTIONS, options)
