"""Which alert setting holds for an asset: its own (decorator keyword, SQL header) over croft.json's.

The one place that rule lives: the streak rule, the freshness watch, run pings and slow-run notices all
ask here, so an asset's override can never win in one and lose in another. An asset's facts are read
only when something is about to be said (a failure, a breach), never on an idle path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from croft.project.bounds import REMIND_NEVER
from croft.project.discovery import discover

if TYPE_CHECKING:
    from croft.project.asset import AssetFacts
    from croft.project.config import Project

__all__ = ["Policy", "resolve_env_value"]

_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def resolve_env_value(project: Project, value: str | None) -> tuple[str | None, str | None]:
    """(the value to use, or None) and why not: ``value`` itself, or the ``.env`` key it names (a bare
    NAME, or ``$NAME`` as ``notify.urls`` writes it). A name ``.env`` does not define is refused."""
    if not value:
        return None, None
    name = value[1:] if value.startswith("$") else value
    if value.startswith("$") or _ENV_NAME.fullmatch(value):
        found = project.env.get(name)
        if found:
            return found, None
        return None, f"{name} is not defined in .env (add {name}=... to {project.root / '.env'})"
    return value, None


class Policy:
    """The alert settings of one project's assets. ``facts`` may be given (the runner has them);
    otherwise they are read statically the first time an asset's setting is asked for."""

    def __init__(self, project: Project, facts: Mapping[str, AssetFacts] | None = None):
        self.project = project
        self._facts = facts

    @property
    def facts(self) -> Mapping[str, AssetFacts]:
        if self._facts is None:
            self._facts = discover(self.project)[0]
        return self._facts

    def _own(self, asset: str) -> AssetFacts | None:
        return self.facts.get(asset)

    def after(self, asset: str) -> int:
        """Tell at this failure in a row."""
        own = self._own(asset)
        if own is not None and own.notify_after is not None:
            return own.notify_after
        return self.project.config.notify_after

    def remind(self, asset: str) -> float | None:
        """Seconds between reminders while it stays failing or stale; None: never."""
        own = self._own(asset)
        seconds = own.notify_remind_s if own is not None and own.notify_remind_s is not None else None
        if seconds is None:
            seconds = self.project.config.notify_remind_s
        return None if seconds == REMIND_NEVER else seconds

    def run_ping(self, asset: str | None = None) -> str | None:
        """The configured run ping (unresolved): the asset's own, or (``asset`` None) the project's."""
        if asset is None:
            return self.project.config.notify_run_ping
        own = self._own(asset)
        return own.run_ping if own is not None else None
