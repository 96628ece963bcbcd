"""``croft metrics``: every registered project's state as Prometheus text, for the tools that watch servers.

The numbers are read from the very Result ``croft status --json`` prints (``control.status.status``) and
from the queue ``croft schedule status`` shows (``tick.slots.queue_view``), so a graph and the command a
person types never disagree: this module only renames them. Turning a look into text is pure
(``samples`` and ``render``); ``gather`` is the shell that reads the registry and asks each project.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.clock import parse_instant
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.project.config import load_project
from croft.scheduler.control.status import status
from croft.scheduler.tick.slots import queue_view
from croft.scheduler.ticklog import project_names
from croft.scheduler.user.registry import Registry

__all__ = ["FAMILIES", "Look", "Sample", "gather", "render", "samples"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# name -> (type, help). The order here is the order of the text.
FAMILIES: dict[str, tuple[str, str]] = {
    "croft_project_readable": ("gauge", "1 when croft could read the project's status, 0 when it could not."),
    "croft_project_scheduling_on": (
        "gauge",
        "1 when the project's scheduling is on now (not off or paused).",
    ),
    "croft_project_last_tick_timestamp_seconds": (
        "gauge",
        "When the project's last tick ran (its heartbeat).",
    ),
    "croft_project_runs_running": ("gauge", "Runs of the project in progress."),
    "croft_asset_rows": ("gauge", "Rows in the asset's table."),
    "croft_asset_last_success_timestamp_seconds": ("gauge", "When the asset's data was last loaded."),
    "croft_asset_failures_in_a_row": ("gauge", "Failed attempts of the asset since its last success."),
    "croft_asset_last_run_timestamp_seconds": ("gauge", "When the asset's last attempt ended (or began)."),
    "croft_asset_last_run_duration_seconds": ("gauge", "How long the asset's last finished attempt took."),
    "croft_asset_stale": ("gauge", "1 when the asset is stale (croft status says why)."),
    "croft_asset_held": ("gauge", "1 when the scheduler holds the asset (croft schedule status says why)."),
    "croft_asset_data_age_seconds": ("gauge", "Age of the data the asset reflects (assets with a promise)."),
    "croft_asset_fresh_within_seconds": (
        "gauge",
        "The asset's freshness promise: the oldest its data may be.",
    ),
    "croft_asset_freshness_breached": ("gauge", "1 when the asset's data is older than its promise."),
    "croft_scheduled_runs_waiting": ("gauge", "Due groups of this user waiting for a free slot (the queue)."),
    "croft_scheduled_runs_running": ("gauge", "Scheduled runs of this user holding a slot."),
    "croft_scheduled_runs_cap": ("gauge", "At most this many scheduled runs of this user at once."),
}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True)
class Look:
    """One registered project: its folder, its name in the tick log, and status's data (None: unreadable)."""

    root: str
    name: str
    data: dict[str, Any] | None


def _seconds(instant: str | None) -> float | None:
    return parse_instant(instant).timestamp() if instant else None


def _flag(value: Any) -> float:
    return 1.0 if value else 0.0


def samples(looks: Iterable[Look], queue: dict[str, Any]) -> list[Sample]:
    """The samples of every family for these looks and the user's queue; a value croft does not have
    (never loaded, no promise, never ticked) is left out rather than written as a made-up zero."""
    out: list[Sample] = []

    def add(name: str, labels: dict[str, str], value: float | int | None) -> None:
        if value is not None:
            out.append(Sample(name, tuple(labels.items()), float(value)))

    for look in looks:
        project = {"project": look.name, "root": look.root}
        add("croft_project_readable", project, _flag(look.data is not None))
        if look.data is None:
            continue
        data = look.data
        scheduling = data.get("scheduling") or {}
        add("croft_project_scheduling_on", project, _flag(scheduling.get("effective") == "on"))
        add("croft_project_last_tick_timestamp_seconds", project, _seconds(scheduling.get("heartbeatAt")))
        add("croft_project_runs_running", project, len(data.get("running") or []))
        promises = data.get("freshness") or {}
        for asset in data.get("assets") or []:
            labels = {**project, "asset": asset["asset"]}
            last = asset.get("lastRun") or {}
            hold = (asset.get("schedule") or {}).get("hold")
            add("croft_asset_rows", labels, asset.get("rows"))
            add("croft_asset_last_success_timestamp_seconds", labels, _seconds(asset.get("lastLoadedAt")))
            add("croft_asset_failures_in_a_row", labels, (asset.get("failing") or {}).get("count", 0))
            add("croft_asset_last_run_timestamp_seconds", labels, _seconds(last.get("at")))
            duration = last.get("durationMs")
            add(
                "croft_asset_last_run_duration_seconds", labels, None if duration is None else duration / 1000
            )
            add("croft_asset_stale", labels, _flag(asset.get("stale")))
            add("croft_asset_held", labels, _flag(hold and hold.get("kind") != "starting"))
            promise = promises.get(asset["asset"])
            if promise:
                add("croft_asset_data_age_seconds", labels, promise.get("ageSeconds"))
                add("croft_asset_fresh_within_seconds", labels, promise.get("withinSeconds"))
                add("croft_asset_freshness_breached", labels, _flag(promise.get("breached")))
    add("croft_scheduled_runs_waiting", {}, len(queue.get("waiting") or []))
    add("croft_scheduled_runs_running", {}, queue.get("running"))
    add("croft_scheduled_runs_cap", {}, queue.get("cap"))
    return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def render(found: Iterable[Sample]) -> str:
    """Prometheus' text format (version 0.0.4): each family's HELP and TYPE, then its samples."""
    by_name: dict[str, list[Sample]] = {name: [] for name in FAMILIES}
    for sample in found:
        by_name[sample.name].append(sample)
    lines: list[str] = []
    for name, (kind, text) in FAMILIES.items():
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for sample in by_name[name]:
            labels = ",".join(f'{key}="{_label(value)}"' for key, value in sample.labels)
            lines.append(
                f"{name}{{{labels}}} {_number(sample.value)}" if labels else f"{name} {_number(sample.value)}"
            )
    return "\n".join(lines) + "\n"


def gather(home: Path | None = None, now: datetime | None = None) -> Result:
    """Every registered project's look and the user's queue, as text (``data.text``); a project croft
    cannot read is a warning and ``croft_project_readable 0``, never the end of the others' numbers."""
    home = home or croft_home()
    now = now or clock.now()
    entries = Registry(home).entries()
    names = project_names(e.root for e in entries)
    looks: list[Look] = []
    problems = []
    for entry in entries:
        try:
            data: dict[str, Any] | None = status(load_project(Path(entry.root))).data
        except CroftError as exc:
            problems.append(exc.problem.with_(severity="warning"))
            data = None
        looks.append(Look(entry.root, names[entry.root], data))
    text = render(samples(looks, queue_view(home, now)))
    projects = [{"root": look.root, "name": look.name, "readable": look.data is not None} for look in looks]
    return Result(data={"text": text, "projects": projects}, problems=problems, ok=True)
