"""The types of croft's asset author's API (``__init__.py`` imports nothing, so they live here)."""

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ingest", "transform"]
__version__: str

ALERT_OPTIONS: tuple[str, ...]
INGEST_OPTIONS: frozenset[str]
TRANSFORM_OPTIONS: frozenset[str]

def _mark(kind: str, allowed: frozenset[str], options: dict[str, Any]) -> Callable[[F], F]: ...
def ingest(**options: Any) -> Callable[[F], F]:
    """Mark ``def rows(ctx)`` as an ingest: a generator yielding dicts (rows) or lists of dicts (batches)."""

def transform(**options: Any) -> Callable[[F], F]:
    """Mark ``def rows(ctx)`` as a Python transform over ``inputs=[...]``, rebuilt in full when stale."""
