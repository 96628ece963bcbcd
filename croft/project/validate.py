"""``croft validate``: the static check of a whole project, schedules included, without running asset code."""

from __future__ import annotations

import importlib.util
from typing import Any

from croft.core.clock import now
from croft.core.problems import CroftError, Problem
from croft.core.result import Next, Result
from croft.core.zones import zone_named
from croft.project.config import Project
from croft.project.discovery import discover
from croft.project.fingerprint import code_hash
from croft.project.graph import Graph
from croft.schedule.cron import next_fires
from croft.schedule.phrase import parse_schedule
from croft.schedule.release import Policy, release_at

__all__ = ["channel_problems", "validate_project"]

APPRISE_INSTALL = "pip install 'croft[apprise]'"


def channel_problems(project: Project) -> list[Problem]:
    """A warning when ``notify.urls`` is set and Apprise, which sends to them, is not installed (validate
    and doctor both say it): the project runs, but those channels would hear nothing."""

    urls = project.config.notify_urls
    if not urls:
        return []
    try:
        found = importlib.util.find_spec("apprise") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return []
    return [
        Problem(
            "APPRISE_MISSING",
            f"croft.json's notify.urls lists {len(urls)} channel(s), but the apprise package that sends to"
            " them is not installed",
            f"install it with `{APPRISE_INSTALL}` (in the environment croft runs from), then"
            " `croft notify test` sends each channel a test message",
            severity="warning",
            fix={"command": APPRISE_INSTALL},
            file="croft.json",
            details={"package": "apprise"},
        )
    ]


def _schedule(
    text: str, zone: str, asset: str, line: int | None, rel: str, policy: Policy
) -> tuple[dict[str, Any], Problem | None]:
    parsed = parse_schedule(text)
    if isinstance(parsed, Problem):
        return {"text": text, "cron": None, "next": []}, parsed.with_(asset=asset, file=rel, line=line)
    fires = next_fires(parsed.cron, zone, now(), 3)
    out: dict[str, Any] = {
        "text": parsed.text,
        "cron": parsed.cron,
        "next": [f.astimezone(_zone(zone)).isoformat() for f in fires],
    }
    if not policy.plain:  # jitter or quiet hours: when each of those fires runs
        runs = [release_at(asset, parsed.spec, zone, f, policy) for f in fires]
        out["runsAt"] = [r.astimezone(_zone(zone)).isoformat() for r in runs]
    return out, None


def _zone(name: str) -> Any:

    return zone_named(name)


def validate_project(project: Project) -> Result:
    facts, problems = discover(project)
    problems = list(problems)
    graph = Graph({name: f.inputs for name, f in facts.items()})
    order, stuck = graph.order()
    for name in stuck:
        problems.append(
            Problem(
                "CYCLE",
                f"{name} is on or after a cycle of inputs",
                "Remove one of the reads that closes the loop.",
                asset=name,
            )
        )
    try:
        env = project.env  # a secret larger than croft keeps: refused here as a run refuses it
    except CroftError as exc:
        problems.append(exc.problem)
        env = {}
    assets = []
    for name, f in facts.items():
        problems.extend(f.problems)
        for missing in graph.missing[name]:
            problems.append(
                Problem(
                    "ASSET_INVALID",
                    f"{name} reads {missing}, which is not an asset of this project",
                    f"Add assets/{missing}.py or assets/{missing}.sql, or fix the name in {f.rel}.",
                    asset=name,
                    file=f.rel,
                )
            )
        absent = [secret for secret in f.secrets if not env.get(secret)]
        if absent:  # a warning: validate also runs where .env is absent on purpose (CI)
            problems.append(
                Problem(
                    "SECRET_MISSING",
                    f"{name} declares secret(s) {', '.join(absent)}, missing from .env and the environment;"
                    " a run will refuse it",
                    f"Add {absent[0]}=... to {project.root / '.env'} (git-ignored; values are never printed).",
                    severity="warning",
                    asset=name,
                    file=f.rel,
                )
            )
        item: dict[str, Any] = {
            "name": name,
            "kind": f.kind,
            "file": f.rel,
            "inputs": list(f.inputs),
            "key": list(f.key),
        }
        try:
            item["codeHash"] = code_hash(project, f)
        except CroftError as exc:
            problems.append(exc.problem)
        if f.schedule is not None:
            config = project.config
            policy = Policy.resolve(f.jitter_s, f.quiet, config.jitter_s, config.quiet)
            item["schedule"], bad = _schedule(
                f.schedule, config.timezone, name, f.schedule_line, f.rel, policy
            )
            if bad:
                problems.append(bad)
        assets.append(item)
    problems.extend(channel_problems(project))
    ok = not any(p.severity == "error" for p in problems)
    nexts = (
        [Next("croft run", "build every asset; a run by a person approves its code for the scheduler")]
        if ok
        else []
    )
    return Result(
        data={"timezone": project.config.timezone, "order": order + stuck, "assets": assets},
        problems=problems,
        next=nexts,
    )
