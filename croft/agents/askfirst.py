"""The ask-the-user-first list: what an agent never does on its own, because it changes what runs
unattended or loses data. ``croft context``, the skill and the AGENTS.md block all print this one list."""

from __future__ import annotations

__all__ = ["ASK_FIRST", "PERSON_RELEASES"]

# (what, why a person decides it)
ASK_FIRST: tuple[tuple[str, str], ...] = (
    ("croft schedule on", "starts running this project's code unattended, every minute, from now on"),
    ("croft schedule off", "stops every scheduled run of this project"),
    ("croft schedule pause", "stops scheduled runs until the pause ends"),
    (
        "croft run <asset> --full-refresh",
        "it replaces a table with everything the source has again: time, API quota and money",
    ),
    ("croft run <asset> --from DATE", "a backfill reloads a past window: time, API quota and money"),
    (
        "anything that deletes data",
        "dropping or emptying a table, deleting warehouse.sqlite, .croft/ or an asset file",
    ),
)

# What releases code an agent built: a person runs it (the scheduler only runs code a person has run).
PERSON_RELEASES = "croft run <asset> in a terminal, or Run now on the `croft ui` page"
