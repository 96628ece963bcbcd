"""The guard around every ``croft`` invocation: nothing a command raises ends in a traceback.

What escapes is answered by the crash boundary (``cli.boundary``: a problem's lines or envelope, Ctrl-C,
a crash file), which is loaded here only when something escaped (docs/architecture.md lists this
exception to imports at the top): a command that succeeds loads none of it. Imports only ``sys``: it
wraps the minute gate's ``tick --all`` too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["last_resort"]


def last_resort(main: Callable[..., None]) -> Callable[..., None]:
    """Decorate ``main(argv)`` so nothing it raises ends in a traceback (SystemExit passes through)."""

    def guarded(argv: list[str] | None = None) -> None:
        args = list(sys.argv[1:] if argv is None else argv)
        try:
            main(argv)
        except SystemExit:
            raise
        except BaseException as exc:
            from croft.cli import boundary  # the crash boundary, only now that something escaped

            sys.exit(boundary.failed(exc, args))

    guarded.__name__, guarded.__doc__ = main.__name__, main.__doc__
    return guarded
