"""Finding the project a command works on: ``--project DIR`` or the folder croft was started in."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from croft.project.config import load_project

if TYPE_CHECKING:
    from typing import Any

__all__ = ["load"]  # and project_option, built on first use (below)


def __getattr__(name: str) -> Any:
    """``project_option``, built with click when a click command asks for it (``croft status`` may run
    without click; ``load`` never needs it)."""
    if name != "project_option":
        raise AttributeError(name)

    option = click.option(
        "--project",
        "project_dir",
        type=click.Path(file_okay=False, exists=True),
        default=None,
        help="The project folder (default: the one containing the current folder).",
    )
    globals()["project_option"] = option
    return option


def load(project_dir: str | None):  # -> croft.project.config.Project

    return load_project(Path(project_dir) if project_dir else None)
