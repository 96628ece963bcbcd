"""``croft schedule explain --asset NAME``: one ingest's own schedule with its jitter and quiet hours, read
from its file without running it, through the release rule the tick decides with (``schedule.release``)."""

from __future__ import annotations

from datetime import datetime

from croft.core.problems import CroftError
from croft.core.result import Result
from croft.core.suggest import unknown_asset
from croft.project.assetfiles import asset_files
from croft.project.config import Project
from croft.project.facts import read_python_facts
from croft.project.sqlfacts import read_sql_facts
from croft.schedule.explain import explain_schedule
from croft.schedule.release import Policy

__all__ = ["explain_asset"]


def explain_asset(project: Project, asset: str, tz: str | None, after: datetime, n: int) -> Result:
    paths = {p.stem: p for p in asset_files(project.root / "assets")}
    path = paths.get(asset)
    if path is None:
        raise unknown_asset(asset, paths, "schedule explain --asset")
    rel = path.relative_to(project.root).as_posix()
    facts = read_sql_facts(path, asset, rel) if path.suffix == ".sql" else read_python_facts(path, asset, rel)
    if not facts.schedule:
        raise CroftError(
            "USAGE",
            f"{asset} has no schedule: {'a transform follows its inputs' if facts.kind != 'ingest' else 'it runs by hand'}",
            f'give an ingest schedule="every hour" in {rel}, or explain a schedule: croft schedule explain "every hour"',
        )
    config = project.config
    policy = Policy.resolve(facts.jitter_s, facts.quiet, config.jitter_s, config.quiet)
    return explain_schedule(facts.schedule, tz or config.timezone, after, n, asset=asset, policy=policy)
