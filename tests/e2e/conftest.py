"""Journeys share the helpers in tests/ (schedulekit, httpserver); every test here is marked ``e2e``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TESTS = str(HERE.parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/e2e ``e2e`` (pyproject.toml: `scripts/test --fast` leaves them out), so
    no journey or real-part test can be left in the unit run by forgetting a line."""
    for item in items:
        if item.path.resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)
