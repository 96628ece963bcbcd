"""The freshness watch: the per-user tick tells when a project's data is older than it promised.

It runs in ``croft tick --all`` itself, for every registered project whatever its setting, so a project
tick that died, a project paused and forgotten or scheduling turned off cannot hide a breach (a dead OS
job is SCHEDULER_STALE's and the external ping's to catch). ``scheduler.user.wakestate`` keeps it off
the idle minute: it runs only when a promise can have broken or something it reads moved.

One cause, one alert: a breach whose cause is the asset's failing runs is not told while the runs' own
failure notice (``notify.streaks``) told it within the reminder period, and telling it counts as that
notice's reminder; a breach because "the scheduler has not ticked" is never told by the ticker that is
ticking the project this very minute (it looks again the next minute).

What was told lives in the project's runs.sqlite (``notify.freshness``: per asset, the breach and when
it was last told), so a breach is told once, reminded by the asset's ``notify.remind`` rule, and its end
("fresh again") told once, across restarts and whichever process looks.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from croft.core.clock import from_iso, to_iso
from croft.core.duration import words
from croft.history.db import open_history, open_readonly
from croft.history.state import get_setting, put_setting
from croft.notify import streaks
from croft.notify.message import fresh_again_message, freshness_message, freshness_payload
from croft.notify.policy import Policy
from croft.notify.send import note_miss, notify_event
from croft.project.config import Project, load_project
from croft.scheduler.tick.freshview import breach_problem, standing

__all__ = ["SETTING", "watch", "watch_project"]

SETTING = "notify.freshness"


def watch(root: str, now: datetime, recheck_s: float) -> str:
    """Look at one project's promises at ``now``; returns when to look next (ISO), ``recheck_s`` at the
    latest. A project it cannot load is looked at again then."""
    later = to_iso(now + timedelta(seconds=recheck_s))
    try:
        project = load_project(Path(root))
    except Exception:  # croft.json broken, the folder gone: status and doctor name that, not this watch
        return later
    return min(later, watch_project(project, now, recheck_s))


def watch_project(project: Project, now: datetime, recheck_s: float = 3600) -> str:
    found = standing(project, now)
    told = _told(project)
    policy = Policy(project)
    stamp = to_iso(now)
    changed = dict(told)
    upcoming = [to_iso(now + timedelta(seconds=recheck_s))]
    streaks = _streaks(project) if any(found.causes[a].code == "failing" for a in found.breached) else {}
    for asset in found.breached:
        fresh, cause = found.fresh[asset], found.causes[asset]
        if cause.code == "no_tick":
            # said by the ticker that is about to tick it: this very minute starts the catch-up run, so
            # look again next minute, when the run has made it fresh or the real cause shows
            upcoming.append(to_iso(now + timedelta(seconds=60)))
            continue
        entry = told.get(asset)
        remind = policy.remind(asset)
        last = _instant((entry or {}).get("notifiedAt"))
        # one cause, one alert: a failure the run's own notice told (or reminded of) within the reminder
        # period is not told again as a breach; the two share one reminder clock
        failed_told = (
            _instant((streaks.get(asset) or {}).get("notifiedAt")) if cause.code == "failing" else None
        )
        if failed_told is not None and (last is None or failed_told > last):
            covered = remind is None or (now - failed_told).total_seconds() < remind
            if covered:
                changed[asset] = {
                    "since": fresh.breach_at,
                    "notifiedAt": to_iso(failed_told),
                    "cause": cause.code,
                }
                if remind is not None:
                    upcoming.append(to_iso(failed_told + timedelta(seconds=remind)))
                continue
        if entry is None or (
            remind is not None and last is not None and (now - last).total_seconds() >= remind
        ):
            _tell_breach(project, asset, fresh, cause, reminder=entry is not None)
            changed[asset] = {"since": fresh.breach_at, "notifiedAt": stamp, "cause": cause.code}
            last = now
            if cause.code == "failing":
                _told_failure(project, asset, now)
        if remind is not None and last is not None:
            upcoming.append(to_iso(last + timedelta(seconds=remind)))
    for asset in told:
        now_fresh = found.fresh.get(asset)
        if now_fresh is not None and now_fresh.breached:
            continue
        if now_fresh is not None and now_fresh.age_s is not None:
            _tell_fresh(project, asset, now_fresh)
        changed.pop(asset, None)  # fresh again, or no promise any more: nothing left to tell
    if changed != told:
        _save(project, changed)
    if found.next_breach:
        upcoming.append(found.next_breach)
    return min(upcoming)


def _tell_breach(project: Project, asset: str, fresh: Any, cause: Any, reminder: bool) -> None:
    name = project.root.name
    title, body = freshness_message(
        name, asset, words(fresh.age_s or 0), words(fresh.within_s), cause.text, cause.fix, reminder
    )
    error = breach_problem(name, asset, fresh, cause).to_dict()
    notify_event(
        project, "freshness", title, body, freshness_payload(name, title, body, "freshness", error, cause.fix)
    )


def _tell_fresh(project: Project, asset: str, fresh: Any) -> None:
    name = project.root.name
    title, body = fresh_again_message(name, asset, words(fresh.age_s or 0), words(fresh.within_s))
    notify_event(project, "fresh", title, body, freshness_payload(name, title, body, "fresh", None, None))


def _streaks(project: Project) -> dict[str, dict[str, Any]]:
    """The failing streaks (``notify.streaks``): when each asset's failure was last told by its run."""

    conn = open_readonly(project.config.state_dir)
    if conn is None:
        return {}
    try:
        return streaks.read(conn)
    except Exception:  # an older history: no streaks
        return {}
    finally:
        conn.close()


def _told_failure(project: Project, asset: str, now: datetime) -> None:
    """A failing breach told: the failure's own reminder counts its period from now too (one cause, one
    alert per period). A streak that ended meanwhile is left alone."""

    def change(found: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], None]:
        if asset not in found:
            return found, None
        return {**found, asset: {**found[asset], "notifiedAt": to_iso(now)}}, None

    try:
        conn = open_history(project.config.state_dir)
    except Exception:
        return
    try:
        streaks.update(conn, change)
    except Exception as exc:  # its reminder may then come early: said in notify.log
        note_miss(project, None, f"freshness: streak not saved: {type(exc).__name__}: {exc}")
    finally:
        conn.close()


def _told(project: Project) -> dict[str, dict[str, Any]]:
    conn = open_readonly(project.config.state_dir)
    if conn is None:
        return {}
    try:
        value = get_setting(conn, SETTING, {})
    except Exception:  # a setting not there yet (an older history): nothing told
        value = {}
    finally:
        conn.close()
    return value if isinstance(value, dict) else {}


def _save(project: Project, told: dict[str, dict[str, Any]]) -> None:
    try:
        conn = open_history(project.config.state_dir)
    except Exception as exc:
        note_miss(project, None, f"freshness: not saved: {type(exc).__name__}: {exc}")
        return
    try:
        put_setting(conn, SETTING, told)
    except Exception as exc:  # told again next minute: better once too often than never
        note_miss(project, None, f"freshness: not saved: {type(exc).__name__}: {exc}")
    finally:
        conn.close()


def _instant(text: Any) -> datetime | None:
    try:
        return from_iso(text) if isinstance(text, str) else None
    except ValueError:
        return None
