"""The ``croft`` entry point: the minute gate for the OS job's ``croft tick --all``, then click for all.

``croft tick --all`` runs every minute for every user, and most minutes need nothing: so before click (or
anything of croft beyond the last-resort guard, ``cli.lastresort``) is imported, the gate
(``scheduler.user.gate``, which imports only ``os``, ``itertools`` and ``operator``) may answer the minute
and end the process, once the pings it owes are sent (``scheduler.user.settled``). Everything else, the rest
of ``tick --all`` included, is the lazy click group of ``croft.cli.group``.
"""

from __future__ import annotations

import sys

from croft.cli.lastresort import last_resort

__all__ = ["main"]


@last_resort
def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args == ["tick", "--all"]:  # the OS job's command, every minute: the gate first, before click
        from croft.scheduler.user.settled import settled

        if settled():
            sys.exit(0)
    from croft.cli.group import run

    run(args)
