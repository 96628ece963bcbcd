"""The scheduler's view of the asset files: static facts cached in runs.sqlite, keyed by ``stat`` data.

The tick runs every minute, so a file is read only when its key moved: its size and mtime, those of the project-local modules it imported
when it was last read, and the project's zone. A tick where nothing changed lists the folder, stats the
files and reads nothing else. Nothing here ever imports or executes asset code.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.clock import to_iso
from croft.core.problems import CroftError, Problem
from croft.history.state import get_setting, put_setting
from croft.project.config import Project
from croft.project.discovery import check_name
from croft.project.facts import read_python_facts
from croft.project.fingerprint import code_hash, import_closure
from croft.project.sqlfacts import read_sql_facts
from croft.schedule import cron
from croft.schedule.cron import CronSpec
from croft.schedule.phrase import parse_schedule
from croft.scheduler.due import AssetInfo
from croft.scheduler.tick.filekeys import asset_paths, stat_text

if TYPE_CHECKING:
    from typing import Any

__all__ = ["CACHE_KEY", "cached_deps", "load_facts", "stat_key"]

CACHE_KEY = "schedule.facts"
_FORMAT = 8  # bump when an entry's shape changes: old caches are read again once


def stat_key(root: str, path: str, deps: list[str], zone: str) -> str:
    """The file's key: its stat, its local imports' stats and the zone (never its contents)."""
    parts = [zone, stat_text(path)]
    parts += [f"{rel}={stat_text(os.path.join(root, rel))}" for rel in deps]
    return "|".join(parts)


def _mtime_iso(path: Path) -> str | None:

    try:
        return to_iso(datetime.fromtimestamp(path.stat().st_mtime, UTC))
    except OSError:
        return None


def _read_one(
    project: Project, path: Path, name: str, old: Mapping[str, Any] | None, zone_from: str | None
) -> dict[str, Any]:
    """Read one changed file statically (the only place the tick parses anything)."""
    root = project.root
    rel = path.relative_to(root).as_posix()
    if check_name(name, rel) is not None:
        return {"notAsset": True, "deps": []}
    facts = read_sql_facts(path, name, rel) if path.suffix == ".sql" else read_python_facts(path, name, rel)
    schedule, cron_text = facts.schedule, None
    schedule_problem = None
    if schedule:
        parsed = parse_schedule(schedule)  # the one reader validate uses too
        cron_text = getattr(parsed, "cron", None)
        if isinstance(parsed, Problem):
            schedule_problem = parsed.with_(asset=name, file=rel, line=facts.schedule_line).to_dict()
    previous = (old or {}).get("info") or {}
    if not facts.ok and schedule is None and previous.get("schedule"):
        # A file that no longer loads keeps its schedule: it stays scheduled, and held.
        schedule, cron_text = previous.get("schedule"), previous.get("cron")
    try:
        digest: str | None = code_hash(project, facts)
        zone_hash = code_hash(project, facts, zone=zone_from) if zone_from else None
    except CroftError:
        digest, zone_hash = None, None
    deps: list[str] = []
    if path.suffix == ".py":
        try:
            closure = import_closure(root, path)
            deps = [p.relative_to(root.resolve()).as_posix() for p in closure.local]
        except (OSError, ValueError):
            deps = []
    kind = facts.kind
    inputs = list(facts.inputs)
    if not facts.ok and previous:
        kind = previous.get("kind") or kind
        inputs = inputs or list(previous.get("inputs") or ())
    info = AssetInfo(
        name=name,
        kind=kind,
        incremental=bool(facts.incremental),
        inputs=tuple(inputs),
        schedule=schedule if kind == "ingest" else None,
        cron=cron_text if kind == "ingest" else None,
        code_hash=digest,
        loads=facts.ok,
        edited_at=_mtime_iso(path),
        zone_from=zone_from,
        zone_hash=zone_hash,
        max_runtime_s=facts.max_runtime_s,
        fresh_within_s=facts.fresh_within_s,
        slow_after_s=facts.slow_after_s,
        jitter_s=facts.jitter_s if kind == "ingest" else None,
        quiet=facts.quiet if kind == "ingest" else None,
        pool=facts.pool,
        schedule_problem=schedule_problem if kind == "ingest" else None,
    )
    out = asdict(info)
    out["inputs"] = list(info.inputs)
    out["spec"] = _spec_json(info.cron)
    return {"info": out, "deps": deps}


_SPEC_SETS = ("minutes", "hours", "doms", "months", "dows")
_SPEC_FLAGS = ("dom_star", "dow_star", "is_interval")


def _spec_json(text: str | None) -> dict[str, Any] | None:
    """The parsed cron, stored with the facts so an idle tick never parses a cron again."""

    if not text:
        return None
    try:
        spec = cron.parse_cron(text)
    except Exception:
        return None
    return {
        "text": spec.text,
        **{k: sorted(getattr(spec, k)) for k in _SPEC_SETS},
        **{k: getattr(spec, k) for k in _SPEC_FLAGS},
    }


def _spec(value: Any) -> Any:

    if not isinstance(value, dict):
        return None
    try:
        return CronSpec.of(
            text=value["text"],
            minutes=frozenset(value["minutes"]),
            hours=frozenset(value["hours"]),
            doms=frozenset(value["doms"]),
            months=frozenset(value["months"]),
            dows=frozenset(value["dows"]),
            dom_star=bool(value["dom_star"]),
            dow_star=bool(value["dow_star"]),
            is_interval=bool(value["is_interval"]),
        )
    except (KeyError, TypeError):
        return None


def load_facts(
    conn: sqlite3.Connection | None, project: Project, *, store: bool = True
) -> tuple[dict[str, AssetInfo], list[str]]:
    """Every asset's AssetInfo and the names of the assets whose files were read this time.

    ``conn`` None (no runs.sqlite yet) reads everything and stores nothing; ``store`` False (status views)
    never writes either.
    """

    zone = project.config.timezone
    root = project.root
    cached: dict[str, Any] = {}
    if conn is not None:
        value = get_setting(conn, CACHE_KEY) or {}
        if isinstance(value, dict) and value.get("format") == _FORMAT:
            cached = value
    entries: dict[str, Any] = cached.get("files") or {}
    old_zone = cached.get("zone")
    base = str(root)
    prefix = len(base) + 1
    by_name: dict[str, list[str]] = {}
    for path in asset_paths(os.path.join(base, "assets")):
        stem = os.path.splitext(os.path.basename(path))[0]
        by_name.setdefault(stem, []).append(path)
    fresh: dict[str, Any] = {}
    read: list[str] = []
    infos: dict[str, AssetInfo] = {}
    for name, paths in sorted(by_name.items()):
        if len(paths) > 1:
            continue  # two files, one name: no asset (validate says NAME_CONFLICT)
        path = paths[0]
        rel = path[prefix:].replace(os.sep, "/")
        old = entries.get(rel)
        key = stat_key(base, path, list((old or {}).get("deps") or ()), zone)
        if old is None or old.get("key") != key:
            zone_from = old_zone if old is not None and old_zone and old_zone != zone else None
            if zone_from is None and old is not None:
                zone_from = (old.get("info") or {}).get("zone_from")
            entry = _read_one(project, Path(path), name, old, zone_from)
            entry["key"] = stat_key(base, path, entry["deps"], zone)
            read.append(name)
        else:
            entry = old
        fresh[rel] = entry
        if entry.get("notAsset"):
            continue
        info = dict(entry["info"])
        info["inputs"] = tuple(info.get("inputs") or ())
        info["spec"] = _spec(info.get("spec"))
        if info.get("quiet") is not None:
            info["quiet"] = tuple(info["quiet"])
        infos[name] = AssetInfo(**info)
    if conn is not None and store and (read or set(fresh) != set(entries) or old_zone != zone):
        put_setting(conn, CACHE_KEY, {"format": _FORMAT, "zone": zone, "files": fresh})
    return infos, read


def cached_deps(conn: sqlite3.Connection) -> list[str]:
    """Every project-local module the cached assets imported (relative paths), for the idle tick."""

    value = get_setting(conn, CACHE_KEY) or {}
    files = value.get("files") if isinstance(value, dict) else None
    return sorted({d for entry in (files or {}).values() for d in entry.get("deps") or ()})
