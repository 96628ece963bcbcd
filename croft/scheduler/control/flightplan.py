"""``croft schedule simulate``: the thin shell that gathers a project's facts as the tick does, without
writing anything, and hands them to the flight plan (``scheduler.simulate``)."""

from __future__ import annotations

import re
import statistics
from datetime import datetime, timedelta
from typing import Any

from croft.core.clock import parse_instant
from croft.core.problems import CroftError
from croft.core.result import Next, Result
from croft.history.db import open_readonly
from croft.project.config import Project
from croft.scheduler.due import AssetInfo
from croft.scheduler.setting import Scheduling, effective_state, read_scheduling
from croft.scheduler.simulate import SimInput, plan_json, simulate
from croft.scheduler.tick import slots
from croft.scheduler.tick.factcache import load_facts
from croft.scheduler.tick.gather import due_input

__all__ = ["MAX_DAYS", "flight_plan"]

MAX_DAYS = 31
RECENT_RUNS = 20  # the durations a median is taken of
FILE_CAP = 1_000_000  # an asset file read for the hosts it names: its first megabyte
_HOST = re.compile(r"""https?://([A-Za-z0-9.\-]+)""")


def flight_plan(project: Project, now: datetime, days: float) -> Result:
    if not 0 < days <= MAX_DAYS:
        raise CroftError(
            "USAGE",
            f"--days {days:g} is out of range",
            f"give a number of days from 1 to {MAX_DAYS}, e.g. --days 7",
        )
    conn = open_readonly(project.config.state_dir)
    try:
        setting = read_scheduling(conn) if conn is not None else Scheduling()
        infos, _ = load_facts(conn, project, store=False)
        given = due_input(
            conn,
            infos,
            now=now,
            tz=project.config.timezone,
            setting=setting if setting.state == "paused" else Scheduling(state="on"),
            next_fires=False,
            database=project.config.database,
            jitter_s=project.config.jitter_s,
            quiet=project.config.quiet,
        )
        durations = _durations(conn, infos) if conn is not None else {}
    finally:
        if conn is not None:
            conn.close()
    pools = dict(project.config.pools)
    sim = SimInput(
        given=given,
        until=now + timedelta(days=days),
        durations=durations,
        cap=slots.max_scheduled_runs(slots.home())[0],
        pools=pools,
        pool_of={n: i.pool for n, i in infos.items() if i.pool in pools},  # an unsized pool is a hold
        hosts=_hosts(project, infos),
    )
    data = plan_json(simulate(sim), sim)
    state = effective_state(setting, now)
    data["scheduling"] = state
    nexts = [Next("croft schedule status", "see what is due and held now")]
    if state == "off":
        nexts.insert(0, Next("croft schedule on", "the plan is what would happen once scheduling is on"))
    return Result(data=data, next=nexts)


def _durations(conn: Any, infos: dict[str, AssetInfo]) -> dict[str, float]:
    """Each ingest's median duration over its recent successful steps (none: the plan's default)."""
    out: dict[str, float] = {}
    for name, info in infos.items():
        if info.kind != "ingest":
            continue
        rows = conn.execute(
            "SELECT started_at, finished_at FROM steps WHERE asset = ? AND status IN ('ok', 'unchanged')"
            " AND finished_at IS NOT NULL ORDER BY started_at DESC LIMIT ?",
            (name, RECENT_RUNS),
        ).fetchall()
        spans = [
            (parse_instant(str(r[1])) - parse_instant(str(r[0]))).total_seconds()
            for r in rows
            if r[0] and r[1]
        ]
        if spans:
            out[name] = max(0.0, statistics.median(spans))
    return out


def _hosts(project: Project, infos: dict[str, AssetInfo]) -> dict[str, tuple[str, ...]]:
    """The hosts each ingest's file names in an http(s) URL: read as text, never run."""
    out: dict[str, tuple[str, ...]] = {}
    for path in sorted((project.root / "assets").rglob("*.py")):
        info = infos.get(path.stem)
        if info is None or info.kind != "ingest":
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(FILE_CAP)
        except OSError:
            continue
        found = tuple(sorted({h.lower() for h in _HOST.findall(text)}))
        if found:
            out[path.stem] = found
    return out
