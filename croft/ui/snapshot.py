"""What the page shows, as croft's own JSON: for each project the envelope ``croft status --json``
prints (each asset's state, last run, schedule, hold and freshness), what each asset reads, the user's
queue and ``croft doctor --json``, and for the pictures only bounded reads of the history
(``history.pagereads``): the week's results per asset and bucket, the day's attempts, an asset's own
page of attempts. The page renders these and nothing else, so it cannot disagree with the commands."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from croft.core import clock, sqlitefile
from croft.core.clock import parse_instant, to_iso
from croft.core.paths import croft_home
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.core.suggest import unknown_asset
from croft.history import pagereads, steplogs
from croft.history.db import open_readonly
from croft.project.config import Project, load_project
from croft.project.discovery import discover
from croft.schedule import cron
from croft.scheduler.control.doctor import doctor
from croft.scheduler.control.flightplan import flight_plan
from croft.scheduler.control.status import status
from croft.scheduler.tick.slots import queue_json
from croft.scheduler.user.registry import Registry
from croft.ui.watch import sources

__all__ = [
    "BUCKET_S",
    "STRIP_BUCKETS",
    "Targets",
    "asset_page",
    "doctor_envelope",
    "envelope_of",
    "overview",
    "project_json",
    "timeline",
]

STRIP_DAYS = 7
BUCKET_S = 6 * 3600  # the 7-day strip: four buckets a day, each showing its worst result
STRIP_BUCKETS = STRIP_DAYS * 86400 // BUCKET_S
TIMELINE_PER_ASSET = 60  # the day's attempts drawn per asset (the newest); more would not be seen apart
PLANNED_PER_ASSET = 48
PLAN_MOST_ASSETS = 200  # above this many assets the timeline draws the cron's fires, not the flight plan
ATTEMPTS_SHOWN = 50
LOGS_SHOWN = 10  # attempts whose own log the asset's page includes (the newest, and the one chosen)
LOG_LINES = 200
# the worst result first: a bucket shows the first of these it holds
WORST = ("failed", "crashed", "interrupted", "running", "skipped", "ok", "unchanged")


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


def strip_start(now: datetime) -> datetime:
    """The 7-day strip's first instant: bucket edges on the hour, so a bucket keeps its runs between looks."""
    edge = now.replace(minute=0, second=0, microsecond=0)
    edge -= timedelta(hours=edge.hour % (BUCKET_S // 3600))
    return edge + timedelta(seconds=BUCKET_S) - timedelta(days=STRIP_DAYS)


# the letter of each result in a strip's text
LETTERS = {
    "failed": "x",
    "crashed": "c",
    "interrupted": "i",
    "running": "r",
    "skipped": "s",
    "ok": "o",
    "unchanged": "u",
}
RESULTS = {v: k for k, v in LETTERS.items()}


def strip_text(rows: list[tuple[int, str, int]]) -> str:
    """One asset's 7-day strip, compact (a thousand assets' strips stay far under the page's 1 MB): a
    token per bucket, oldest first, ``.`` for none, else the worst result's letter, how many attempts,
    and ``/N`` failed ones: ``. o7 x7/1 s2``."""
    buckets: dict[int, dict[str, int]] = {}
    for bucket, result, count in rows:
        if 0 <= bucket < STRIP_BUCKETS:
            buckets.setdefault(bucket, {})[result] = buckets.get(bucket, {}).get(result, 0) + count
    out = []
    for b in range(STRIP_BUCKETS):
        counts = buckets.get(b)
        if not counts:
            out.append(".")
            continue
        worst = min(counts, key=lambda r: WORST.index(r) if r in WORST else len(WORST))
        bad = counts.get("failed", 0) + counts.get("crashed", 0)
        out.append(f"{LETTERS.get(worst, 'i')}{sum(counts.values())}" + (f"/{bad}" if bad else ""))
    return " ".join(out)


def parse_strip(text: str) -> list[tuple[str, int, int] | None]:
    """``strip_text`` read back: per bucket ``(worst result, attempts, failed)`` or None."""
    out: list[tuple[str, int, int] | None] = []
    for token in text.split(" ") if text else []:
        if token == ".":
            out.append(None)
            continue
        n, _, bad = token[1:].partition("/")
        out.append((RESULTS.get(token[0], "interrupted"), int(n), int(bad or 0)))
    return out


def _strips(project: Project, since: datetime) -> dict[str, str]:
    conn = open_readonly(project.config.state_dir)
    if conn is None:
        return {}
    try:
        found = pagereads.step_buckets(conn, since, BUCKET_S)
    finally:
        conn.close()
    return {asset: strip_text(rows) for asset, rows in found.items()}


STRIP_WAIT = 0.25  # a look waits for its strips at most this share of what status took, then goes
STRIP_FLOOR_S = 0.1  # (or this long, whichever is more: a small history is counted in milliseconds)


def project_json(root: Path, now: datetime, late: Callable[[], None] | None = None) -> dict[str, Any]:
    """One project's look: ``croft status --json`` and its 7-day strips (what each asset reads is asked
    by the pages that draw it: ``inputs_of``).

    The strips' grouped read runs beside status on a thread of its own (SQLite lets go of the GIL while
    it reads). With ``late`` given, the look does not wait for them past a quarter of status's own time
    (or a tenth of a second):
    it goes with ``stripsPending``, and the thread fills them into the same look and calls ``late``
    (the server tells the pages, which fetch the look again without it being retaken). A page is never
    kept waiting on the history's week for what status has already answered."""
    loaded = _project(root)
    if isinstance(loaded, dict):  # no longer a project (moved, broken croft.json): said, not skipped
        return {"root": str(root), "name": root.name, "status": loaded, "inputs": {}, "strips": {}}
    since = strip_start(now)
    look: dict[str, Any] = {
        "root": str(root),
        "name": root.name,
        "timezone": loaded.config.timezone,
        "strips": {},
        "stripsPending": False,
        "stripStart": to_iso(since),
    }
    done = threading.Event()

    def read_strips() -> None:
        found: dict[str, str] = {}
        with contextlib.suppress(CroftError, OSError):  # status says what is wrong with the history
            found = _strips(loaded, since)
        look["strips"] = found
        look["stripsPending"] = False  # a value, not a key removed: a page may be reading the look now
        done.set()
        if late is not None and told:
            late()

    told: list[bool] = []
    side = threading.Thread(target=read_strips, name="croft-ui-strips", daemon=True)
    started = time.monotonic()
    side.start()
    look["status"] = envelope_of(status, loaded)
    if late is None:
        side.join()
    elif not done.wait(max(STRIP_FLOOR_S, STRIP_WAIT * (time.monotonic() - started))):
        look["stripsPending"] = True
        told.append(True)
        if done.is_set():  # it finished between the wait and the mark: nothing is pending
            look["stripsPending"] = False
    return look


_INPUTS: dict[str, tuple[object, dict[str, list[str]]]] = {}
_INPUTS_LOCK = threading.Lock()


def inputs_of(root: Path) -> dict[str, list[str]]:
    """What each asset reads (its facts, read statically), kept while the project's files keep their
    size and time: the lineage graph and an asset's page ask it at each look, the files rarely change."""

    key = sources([root])
    with _INPUTS_LOCK:
        found = _INPUTS.get(str(root))
    if found is not None and found[0] == key:
        return found[1]
    loaded = _project(root)
    inputs: dict[str, list[str]] = {}
    if not isinstance(loaded, dict):
        try:
            facts, _ = discover(loaded)
            inputs = {name: list(f.inputs) for name, f in facts.items()}
        except CroftError:
            inputs = {}
    with _INPUTS_LOCK:
        _INPUTS[str(root)] = (key, inputs)
    return inputs


def doctor_envelope() -> dict[str, Any]:
    return envelope_of(doctor)


def overview(
    targets: Targets, doctor_json: dict[str, Any] | None, late: Callable[[], None] | None = None
) -> dict[str, Any]:
    """``GET /api/status``: every shown project's look, the user's queue and doctor (None while its first
    look is under way), and the moment of the look."""
    now = clock.now()
    queue: dict[str, Any] | None
    try:
        queue = queue_json(croft_home(), now)
        queue.pop("capProblem", None)
    except (CroftError, OSError):
        queue = None
    return {
        "at": to_iso(now),
        "bucketSeconds": BUCKET_S,
        "projects": [project_json(r, now, late) for r in targets.roots()],
        "queue": queue,
        "doctor": doctor_json,
    }


def planned(entry: dict[str, Any], tz: str, now: datetime, until: datetime, most: int) -> list[str]:
    """The asset's fires from its next one (the due policy's, in ``croft status``) up to ``until``."""
    sched = entry.get("schedule") or {}
    first, expr = sched.get("nextFireAt"), sched.get("cron")
    if not first:
        return []
    at = parse_instant(first)
    out = [to_iso(at)] if at <= until else []
    if expr and out:
        with contextlib.suppress(CroftError):
            out += [to_iso(f) for f in cron.next_fires(expr, tz, at, most - 1) if f <= until]
    return out


def timeline(project: dict[str, Any], hours: int = 24) -> dict[str, Any]:
    """The last ``hours`` of attempts per asset and the next ``hours`` of planned fires, for one project
    look (``project_json``)."""
    now = clock.now()
    root = Path(project["root"])
    loaded = _project(root)
    past: dict[str, Any] = {}
    if not isinstance(loaded, dict):
        conn = open_readonly(loaded.config.state_dir)
        if conn is not None:
            try:
                past = pagereads.window_steps(conn, now - timedelta(hours=hours), TIMELINE_PER_ASSET)
            except CroftError:
                past = {}
            finally:
                conn.close()
    tz = project.get("timezone") or "UTC"
    assets = (project["status"].get("data") or {}).get("assets") or []
    until = now + timedelta(hours=hours)
    starts = _plan_starts(loaded, now, hours) if isinstance(loaded, Project) else {}
    return {
        "at": to_iso(now),
        "hours": hours,
        "past": past,
        "planned": {
            a["asset"]: starts.get(a["asset"]) or planned(a, tz, now, until, PLANNED_PER_ASSET)
            for a in assets
        },
    }


def _plan_starts(project: Project, now: datetime, hours: int) -> dict[str, list[str]]:
    """Where the flight plan (``croft schedule simulate``) starts each asset in the next ``hours``: jitter,
    quiet hours and queue waits included. An asset it never starts (held, paused) is drawn at its cron's
    fires instead, marked as the hold says; so is every asset of a project past ``PLAN_MOST_ASSETS``."""
    try:
        if len(list((project.root / "assets").iterdir())) > PLAN_MOST_ASSETS:
            return {}
        plan = flight_plan(project, now, hours / 24).data
    except (CroftError, OSError):
        return {}
    out: dict[str, list[str]] = {}
    for run in plan["runs"]:
        for asset in run["assets"]:
            out.setdefault(asset, []).append(run["startAt"])
    return out


def _columns(project: Project, asset: str) -> list[dict[str, Any]]:
    """The table's columns as the warehouse has them (read-only; none before its first run)."""

    path = project.config.database
    if not path.is_file():
        return []
    try:
        conn = sqlitefile.connect(path, "read", timeout=2.0)
        try:
            rows = conn.execute(f'PRAGMA table_info("{asset.replace(chr(34), chr(34) * 2)}")').fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []
    return [{"name": r[1], "type": r[2] or ""} for r in rows if not str(r[1]).startswith("_croft")]


def asset_page(
    root: Path,
    asset: str,
    look: dict[str, Any] | None,
    *,
    run_id: str | None = None,
    result: str | None = None,
    trigger: str | None = None,
) -> dict[str, Any]:
    """An asset's page: its entry of ``croft status --json`` (from ``look``, the project's last look,
    or a fresh one), what it reads and what reads it, its next three fires, its columns, its attempts
    (filtered by ``result``: ``failed``, ``ok`` or ``skipped``, and ``trigger``: ``schedule`` or
    ``manual``), and the newest attempts' own logs."""
    now = clock.now()
    base: dict[str, Any] = {"root": str(root), "asset": asset, "at": to_iso(now)}
    loaded = _project(root)
    if isinstance(loaded, dict):
        return {**base, "problem": loaded}
    if look is None:
        look = project_json(root, now)
    entry = next(
        (a for a in (look["status"].get("data") or {}).get("assets") or [] if a["asset"] == asset), None
    )
    if entry is None:
        names = {a["asset"]: None for a in (look["status"].get("data") or {}).get("assets") or []}
        exc = unknown_asset(asset, names, "logs")
        return {**base, "problem": Result(problems=[exc.problem]).envelope()}
    statuses = {"failed": ("failed", "crashed"), "ok": ("ok", "unchanged"), "skipped": ("skipped",)}.get(
        result or "", ()
    )
    redact = loaded.redactor
    conn = open_readonly(loaded.config.state_dir)
    attempts: list[dict[str, Any]] = []
    logs: dict[str, Any] = {}
    if conn is not None:
        try:
            attempts = pagereads.asset_attempts(
                conn, asset, statuses=statuses, trigger=trigger or None, limit=ATTEMPTS_SHOWN
            )
            wanted = attempts[:LOGS_SHOWN]
            wanted += [a for a in attempts[LOGS_SHOWN:] if a["runId"] == run_id]
            for a in wanted:
                body = steplogs.text(conn, a["runId"], asset, a["attempt"], a["log"]) or ""
                lines = body.splitlines()
                logs[f"{a['runId']}#{a['attempt']}"] = {
                    "lines": [redact.text(line) for line in lines[-LOG_LINES:]],
                    "truncated": len(lines) > LOG_LINES,
                }
        except CroftError as exc:
            base["historyProblem"] = exc.problem.to_dict()
        finally:
            conn.close()
    inputs = inputs_of(root)
    tz = look.get("timezone") or "UTC"
    return {
        **base,
        "timezone": tz,
        "scheduling": (look["status"].get("data") or {}).get("scheduling"),
        "entry": entry,
        "freshness": ((look["status"].get("data") or {}).get("freshness") or {}).get(asset),
        "reads": inputs.get(asset, []),
        "readBy": sorted(a for a, ins in inputs.items() if asset in ins),
        "fires": planned(entry, tz, now, now + timedelta(days=400), 3),
        "columns": _columns(loaded, asset),
        "filters": {"result": result or "", "trigger": trigger or ""},
        "chosen": run_id,
        "attempts": redact.obj(attempts),
        "logs": logs,
    }
