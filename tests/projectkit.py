"""The smallest real project on disk, for tests that start croft as a process: a croft.json in UTC and
one ingest of one row. The ``make_project`` fixture lays out richer ones in a test's own tmp_path; this
one also serves a module-scoped fixture (a folder from tmp_path_factory) and a broken world's builder."""

from __future__ import annotations

from pathlib import Path

INGEST = """from croft import ingest


@ingest(key="id")
def {name}(ctx):
    yield [{{"id": 1}}]
"""


def one_ingest(root: Path, name: str = "orders") -> Path:
    """Lay out the project at ``root`` with the ingest ``name`` (assets/NAME.py) and return ``root``."""
    (root / "assets").mkdir(parents=True)
    (root / "croft.json").write_text('{"timezone": "UTC"}\n')
    (root / "assets" / f"{name}.py").write_text(INGEST.format(name=name))
    return root
