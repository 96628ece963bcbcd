"""Did-you-mean: the one close match croft offers when a name is not one it knows.

Two measures, both here: ``nearest`` (difflib's ratio) for names of things (assets, guides, options,
keys, zones), and ``closest`` (edit distance with adjacent swaps) for the short words of the schedule
language, where one typo in "mnoday" must still find "monday".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from croft.core.problems import CroftError
from croft.core.text import clip

__all__ = ["NEAREST_CHARS", "closest", "nearest", "unknown_asset"]

NEAREST_CHARS = 200


def nearest(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice most like ``word`` (difflib's ratio at least ``cutoff``), or None when none is close.

    difflib is imported here, on the error path only: discovery, which the tick runs, imports this module.
    """

    if len(word) > NEAREST_CHARS:  # no name is that long, and difflib's cost grows with it
        return None
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return close[0] if close else None


def unknown_asset(name: str, known: Iterable[str], command: str = "run") -> CroftError:
    """The UNKNOWN_ASSET error for a name on the command line, for every command that takes asset names.

    ``command`` is the croft command the user typed (run, preview, logs): the fix repeats that command with
    the close name, so a preview's fix previews and never writes.
    """
    close = nearest(name, sorted(known))
    return CroftError(
        "UNKNOWN_ASSET",
        f"there is no asset named {clip(repr(name))}",
        f"Did you mean {close!r}?" if close else "`croft validate` lists every asset.",
        suggestion=close,
        fix={
            "kind": "command",
            "description": f"{command} the asset croft thinks you meant",
            "command": f"croft {command} {close}",
        }
        if close
        else None,
    )


def closest(word: str, choices: tuple[str, ...] | list[str] | set[str] | frozenset[str]) -> str | None:
    """The choice nearest to ``word`` by edit distance (adjacent swaps count one), or None if none is close.

    Close means at most a third of the word's length (at least one edit); ties go to the earlier choice.
    """
    word = word.lower()
    limit = max(1, len(word) // 3)
    best: tuple[int, int, str] | None = None
    for index, choice in enumerate(choices):
        if abs(len(choice) - len(word)) > limit:
            continue
        distance = _edit_distance(word, choice.lower())
        if distance <= limit and (best is None or (distance, index) < best[:2]):
            best = (distance, index, choice)
    return best[2] if best else None


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[len(b)]
