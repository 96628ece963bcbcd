"""Finding the project a command works on: ``--project DIR`` or the folder croft was started in."""

from __future__ import annotations

from pathlib import Path

import click

from croft.project.config import Project, load_project

__all__ = ["load", "project_option"]

project_option = click.option(
    "--project",
    "project_dir",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="The project folder (default: the one containing the current folder).",
)


def load(project_dir: str | None) -> Project:
    return load_project(Path(project_dir) if project_dir else None)
