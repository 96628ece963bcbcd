"""What the page shows, as croft's own JSON: for each project the envelopes ``croft status --json``,
``croft schedule status --json`` and ``croft logs ASSET --runs --json`` print, and the one of
``croft doctor --json`` for the user. The page renders these and nothing else, so it cannot disagree
with the commands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.clock import to_iso
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.engine.logs import show_logs
from croft.project.config import Project, load_project
from croft.scheduler.control.commands import schedule_status
from croft.scheduler.control.doctor import doctor
from croft.scheduler.control.status import status
from croft.scheduler.user.registry import Registry

__all__ = ["Targets", "asset_page", "doctor_envelope", "envelope_of", "overview"]


def envelope_of(work: Callable[..., Result], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The envelope a command prints for this work: a CroftError is its problem, as on the command line."""
    try:
        result = work(*args, **kwargs)
    except CroftError as exc:
        result = Result(problems=[exc.problem, *exc.extra])
    return result.envelope()


@dataclass(frozen=True)
class Targets:
    """The projects a page shows: the one it was started for, or (``--all``) every registered one, read
    again at each look so a project registered meanwhile appears."""

    root: Path | None = None  # None: every project in the registry

    def roots(self) -> list[Path]:
        if self.root is not None:
            return [self.root]
        return [Path(e.root) for e in Registry().entries()]

    def find(self, root: str) -> Path | None:
        """The shown project named by a request (by its folder), or None: a page acts on its own only."""
        return next((r for r in self.roots() if str(r) == root), None)


def _project(root: Path) -> Project | dict[str, Any]:
    try:
        return load_project(root)
    except CroftError as exc:
        return Result(problems=[exc.problem, *exc.extra]).envelope()


def _history(project: Project, names: list[str]) -> dict[str, dict[str, Any]]:
    return {
        name: envelope_of(show_logs, project, name, failed=False, runs_only=True, since=None)
        for name in names
    }


def project_json(root: Path) -> dict[str, Any]:
    """One project's envelopes: status, schedule status and each asset's recent runs."""
    loaded = _project(root)
    if isinstance(loaded, dict):  # no longer a project (moved, broken croft.json): said, not skipped
        return {"root": str(root), "name": root.name, "status": loaded, "schedule": loaded, "runs": {}}
    st = envelope_of(status, loaded)
    names = [a["asset"] for a in (st.get("data") or {}).get("assets", [])]
    return {
        "root": str(root),
        "name": root.name,
        "timezone": loaded.config.timezone,
        "status": st,
        "schedule": envelope_of(schedule_status, loaded),
        "runs": _history(loaded, names),
    }


def doctor_envelope() -> dict[str, Any]:
    return envelope_of(doctor)


def overview(targets: Targets, doctor_json: dict[str, Any]) -> dict[str, Any]:
    """``GET /api/status``: every shown project's envelopes, the user's doctor, and the moment of the look."""
    return {
        "at": to_iso(clock.now()),
        "projects": [project_json(r) for r in targets.roots()],
        "doctor": doctor_json,
    }


def asset_page(root: Path, asset: str, run_id: str | None) -> dict[str, Any]:
    """An asset's page: its last 50 attempts (``croft logs ASSET --json``), and the chosen run's report
    with its log (``croft logs RUN_ID --json``), the newest when none is chosen."""
    loaded = _project(root)
    if isinstance(loaded, dict):
        return {"root": str(root), "asset": asset, "steps": loaded, "run": None, "at": to_iso(clock.now())}
    steps = envelope_of(show_logs, loaded, asset, failed=False, runs_only=False, since=None)
    found = (steps.get("data") or {}).get("steps") or []
    chosen = run_id or (found[0]["runId"] if found else None)
    run = (
        envelope_of(show_logs, loaded, chosen, failed=False, runs_only=False, since=None) if chosen else None
    )
    return {"root": str(root), "asset": asset, "steps": steps, "run": run, "at": to_iso(clock.now())}
