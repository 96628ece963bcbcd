"""croft: local data pipelines that keep themselves fresh.

This module is the asset author's API and nothing else: ``@ingest(...)`` and ``@transform(...)``. Every
asset file and every croft process (the minute gate's included) imports it, so it imports nothing: its
types are in ``__init__.pyi`` beside it, which type checkers read instead.
"""

__all__ = ["ingest", "transform"]
__version__ = "0.1.0"

# Who is told, and when (docs/notifications.md): each wins over croft.json's notify for this asset.
ALERT_OPTIONS = ("notify_after", "notify_remind", "run_ping", "fresh_within", "slow_after")
INGEST_OPTIONS = frozenset(
    {
        "schedule", "key", "incremental", "secrets", "checks", "write", "description", "retries", "timeout",
        "max_runtime", "pool", *ALERT_OPTIONS,
        "jitter", "quiet",  # when a fire is let go (docs/scheduling.md)
    }
)  # fmt: skip
TRANSFORM_OPTIONS = frozenset(
    {"inputs", "key", "checks", "description", "max_runtime", "pool", *ALERT_OPTIONS}
)


def _mark(kind, allowed, options):
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"@{kind}() got unknown option(s) {', '.join(unknown)}; allowed: {sorted(allowed)}")

    def decorate(func):
        func.__croft__ = {"kind": kind, **options}
        return func

    return decorate


def ingest(**options):
    """Mark ``def rows(ctx)`` as an ingest: a generator yielding dicts (rows) or lists of dicts (batches).

    croft reads these options from the file's text without importing it, so they must be literals.
    """
    return _mark("ingest", INGEST_OPTIONS, options)


def transform(**options):
    """Mark ``def rows(ctx)`` as a Python transform over ``inputs=[...]``, rebuilt in full when stale."""
    return _mark("transform", TRANSFORM_OPTIONS, options)
