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


def test_every_length_of_time_a_message_gives_is_said_by_duration_words() -> None:
    """ctx.http's Retry-After hint and SCHEDULER_STALE say a length the one way (the ceiling's TIMEOUT,
    the wake line and the registry's lock say it too; their own tests read the words)."""
    from datetime import UTC, datetime, timedelta
    from pathlib import Path

    import httpx

    from croft.core.clock import to_iso
    from croft.core.duration import words
    from croft.engine.http import status_error
    from croft.scheduler.control.diagnosis import stale_problem
    from croft.scheduler.jobs.health import Link
    from croft.scheduler.setting import Scheduling

    response = httpx.Response(429, request=httpx.Request("GET", "http://example.test/"))
    hint = status_error(
        "GET", "http://example.test/", response, attempts=3, retry_after=5400, max_retry_after=300
    )
    assert (
        f"wait {words(5400)} before" in hint.problem.hint
        and f"the {words(300)} croft waits" in hint.problem.hint
    )

    now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    beat = to_iso(now - timedelta(hours=7, minutes=12))
    setting = Scheduling(state="on", via="os-job", since="2026-06-01T00:00:00.000Z")
    link = Link.broken(
        "OS job", "the per-user scheduler job is not installed", "job_missing", "croft schedule on"
    )
    stale = stale_problem(setting, beat, now, link, Path("/h/logs/tick.log"), [])
    assert f"has not ticked for {words(7 * 3600 + 12 * 60)}" in stale.message
    waited = stale_problem(setting, None, now, link, Path("/h/logs/tick.log"), [], waited_ms=300)
    assert f"within {words(0.3)} of turning" in waited.message
