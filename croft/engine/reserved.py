"""The columns croft adds to every data table, which no asset may yield.

Its own module because readers of a table's shape (``engine.peek``: no write code loaded) need them as
much as the write itself (``engine.rows``, ``engine.staging``, ``engine.warehouse``).
"""

__all__ = ["RESERVED_COLUMNS"]

RESERVED_COLUMNS = frozenset({"_loaded_at", "_row_hash"})
