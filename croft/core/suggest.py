"""Did-you-mean: the one close match croft offers when a name is not one it knows."""

from __future__ import annotations

from collections.abc import Iterable

from croft.core.problems import CroftError

__all__ = ["nearest", "unknown_asset"]


def nearest(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice most like ``word`` (difflib's ratio at least ``cutoff``), or None when none is close.

    difflib is imported here, on the error path only: discovery, which the tick runs, imports this module.
    """
    import difflib

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
        f"there is no asset named {name!r}",
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
