"""``croft schedule pause ASSET [--for 2h]`` and ``croft schedule resume ASSET``: the thin shell over
``scheduler.pause`` (the rule itself) that checks the name and says what changed."""

from __future__ import annotations

from typing import Any

from croft.core import clock, when
from croft.core.result import Next, Result
from croft.core.suggest import unknown_asset
from croft.history.db import open_history
from croft.history.state import delete_setting
from croft.project.assetfiles import asset_files
from croft.project.config import Project
from croft.scheduler import pause
from croft.scheduler.control.commands import parse_pause_length
from croft.scheduler.tick.memo import MEMO_KEY

__all__ = ["pause_asset", "resume_asset"]


def _known(project: Project, asset: str, command: str) -> None:
    names = {p.stem for p in asset_files(project.root / "assets")}
    if asset not in names:
        raise unknown_asset(asset, names, command)


def pause_asset(project: Project, asset: str, length: str | None) -> Result:
    _known(project, asset, "schedule pause")
    now = clock.now()
    until = now + parse_pause_length(length) if length is not None else None
    conn = open_history(project.config.state_dir)
    try:
        pauses = pause.write_pause(conn, asset, now, until)
        delete_setting(conn, MEMO_KEY)  # the next tick decides again, never trusting a memo from before
    finally:
        conn.close()
    data: dict[str, Any] = {
        "action": "pause",
        "asset": asset,
        "until": pauses[asset]["until"],
        "paused": sorted(pauses),
    }
    return Result(data=data, next=[Next(f"croft schedule resume {asset}", "let the scheduler run it again")])


def resume_asset(project: Project, asset: str) -> Result:
    _known(project, asset, "schedule resume")
    now = clock.now()
    conn = open_history(project.config.state_dir)
    try:
        was = pause.resume(conn, asset, now)
        delete_setting(conn, MEMO_KEY)
        left = pause.active_pauses(pause.read_pauses(conn), now)
    finally:
        conn.close()
    data = {"action": "resume", "asset": asset, "wasPaused": was, "paused": sorted(left)}
    return Result(data=data, next=[Next("croft schedule status", "see when it fires next")])


def pause_words(data: dict[str, Any]) -> str:
    """The human line of a pause or resume."""
    asset = data["asset"]
    if data["action"] == "resume":
        if not data["wasPaused"]:
            return f"{asset} was not paused; the scheduler runs it as its schedule says"
        return f"{asset} resumed: the scheduler runs it again as its schedule says"
    until = data.get("until")
    end = f" until {when.clock(until, clock.now())}" if until else " until `croft schedule resume`"
    return f"{asset} paused{end}: the scheduler starts nothing for it; the rest of the project runs"
