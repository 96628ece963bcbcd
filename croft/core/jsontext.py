"""JSON text for the per-minute paths, without the import of the ``json`` package.

``import json`` compiles a handful of regular expressions and loads ``re`` and ``enum`` to do it: about
15 ms of CPU here, an eighth of what an idle minute of ``croft tick --all`` over a thousand projects
costs. The package does its real work in ``_json``, its C accelerator: the scanner ``json.loads`` runs
and the encoder ``json.dumps`` runs when there is no indent. These two functions call them directly, with
the package's own defaults, so the values and the text are the package's. Text that does not parse is
handed to ``json.loads``, so an error is the package's own, type and message; an interpreter without
``_json`` uses the package for everything.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["dumps", "loads"]

_SPACE = " \t\n\r"  # what ``json`` skips around a document


class _Defaults:
    """What ``_json.make_scanner`` reads of a decoder: ``json.loads``'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


def _unserialisable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


try:
    import _json

    _scan = _json.make_scanner(_Defaults())  # type: ignore[arg-type]  # a context: its attributes are read
    _ascii = _json.encode_basestring_ascii
    _json.make_encoder(
        {}, _unserialisable, _ascii, None, ": ", ", ", False, False, True
    )  # the arguments it takes
except (ImportError, AttributeError, TypeError):  # an interpreter without the accelerator
    _json = None  # type: ignore[assignment]


def loads(text: str) -> Any:
    """``json.loads(text)``."""
    if _json is not None and not text.startswith("\ufeff"):  # a BOM is the package's error to raise
        start = len(text) - len(text.lstrip(_SPACE))
        try:
            value, end = _scan(text, start)
        except (StopIteration, ValueError, RecursionError, SystemError):  # not JSON: the package says why
            pass  # (SystemError: the scanner of 3.11 cannot name the error until json.decoder is loaded)
        else:
            if not text[end:].strip(_SPACE):
                return value
    import json

    return json.loads(text)


def dumps(value: Any) -> str:
    """``json.dumps(value)``: the same text (ASCII, ``", "`` and ``": "``, circular values refused)."""
    if _json is None:
        import json

        return json.dumps(value)
    encode = _json.make_encoder({}, _unserialisable, _ascii, None, ": ", ", ", False, False, True)
    return "".join(encode(value, 0))
