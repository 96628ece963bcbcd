"""Did-you-mean: the one close match croft offers when a name is not one it knows."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["nearest"]


def nearest(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice most like ``word`` (difflib's ratio at least ``cutoff``), or None when none is close.

    difflib is imported here, on the error path only: discovery, which the tick runs, imports this module.
    """
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return close[0] if close else None
