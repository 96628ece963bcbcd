"""An on/off switch of a command (``--due``, ``--check``): off unless given, so every switch is declared
the same way in one place rather than as a click option spelled out anew in each command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["flag"]


def flag(*names: str, help: str, hidden: bool = False) -> Callable[[Any], Any]:
    """The click option for a switch: ``names`` as click takes them (``"--all", "every"``), its help text."""
    return click.option(*names, is_flag=True, hidden=hidden, help=help)
