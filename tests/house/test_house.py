"""The house rules the import contracts cannot state: empty package faces, one way to open SQLite."""

from __future__ import annotations

import ast
from pathlib import Path

import croft

CROFT = Path(croft.__file__).resolve().parent


def _modules() -> list[Path]:
    return sorted(p for p in CROFT.rglob("*.py") if "_data" not in p.parts)


def test_every_package_face_is_empty_of_imports() -> None:
    """An ``__init__.py`` that hands names on hides where they live; each says what its room is, no more."""
    faces = [p for p in _modules() if p.name == "__init__.py" and p.parent != CROFT]
    assert len(faces) >= 10
    importing = [
        str(p.relative_to(CROFT))
        for p in faces
        if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(ast.parse(p.read_text())))
    ]
    assert importing == []


def test_only_core_sqlitefile_opens_a_sqlite_file() -> None:
    """Every connection goes through ``core.sqlitefile.connect`` (its URI quoting, its busy timeout); the
    one exception is the in-memory database the SQL reader uses to find a SELECT's inputs."""
    calls = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "connect"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "sqlite3"
            ):
                memory = (
                    bool(node.args)
                    and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value == ":memory:"
                )
                calls.append((str(path.relative_to(CROFT)), memory))
    assert [c for c in calls if not c[1]] == [("core/sqlitefile.py", False)]
