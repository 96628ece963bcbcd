"""The rules of a scheduled run (``croft run --due``), called by the runner at three points.

1. planning: the assets the tick named that still exist, planned the normal way (their stale
   downstream follows; a named transform runs only if it is still stale), then every hold is checked
   again: scheduling off or paused, code no person has run (SCHEDULE_HELD), another run's lease;
2. leases: a scheduled run never waits for one; a lease it meets holds that asset, which stays due;
3. each step's start: off/paused and SCHEDULE_HELD again, against the file as it is now (an edit made
   while the run waited is caught), and an incremental ingest whose table was dropped or emptied
   outside croft (TABLE_MISSING, noted and told once: ``tableholds``); then the attempt, and for an
   ingest its fire, are recorded before any work.

A held asset gets no step row and no attempt, and its fire is not recorded, so it stays due; what reads
it is skipped (and recorded) the usual way. Scheduled runs are ``trigger = schedule``, ``human = 0``, so
they never approve code.
"""

from __future__ import annotations

import os
import signal
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from croft.core import knobs
from croft.core.clock import now as clock_now
from croft.core.clock import to_iso
from croft.core.jsonfile import write_atomic
from croft.core.problems import CroftError
from croft.core.suggest import unknown_asset
from croft.engine.runner import RunOptions, run_assets
from croft.engine.tablehealth import lost_rows, observe, table_problem
from croft.history import catalog, state
from croft.notify.message import Failed
from croft.notify.send import notify_scheduled_failure
from croft.project.asset import AssetFacts
from croft.project.config import Project, find_root, load_project
from croft.project.facts import read_python_facts
from croft.project.fingerprint import code_hash
from croft.project.sqlfacts import read_sql_facts
from croft.schedule import cron
from croft.schedule.phrase import Schedule, parse_schedule
from croft.scheduler.due import AssetInfo, approval_hold
from croft.scheduler.pause import active_pauses, asset_pause_hold_words, read_pauses
from croft.scheduler.setting import effective_state, read_scheduling
from croft.scheduler.tick import slots, tableholds
from croft.scheduler.tick.afterrun import after_run
from croft.scheduler.tick.gather import last_ok_starts, live_leases
from croft.scheduler.tick.rungroup import end_own_group
from croft.scheduler.tick.settle import SPAWNED_KEY, not_started_path
from croft.scheduler.tick.slotlocks import Lock, adopt

__all__ = ["DueRules"]


class DueRules:
    def __init__(self, project: Project, conn: sqlite3.Connection, facts: dict[str, AssetFacts]):
        self.project = project
        self.conn = conn
        self.facts = facts
        self.held: dict[str, str] = {}
        self.run_id: str | None = None

    # -- 1. planning ---------------------------------------------------------------------------------------
    def selectors(self, names: list[str], run_id: str | None = None) -> list[str]:
        """The named assets that still exist. Started by the tick (``run_id``), a file removed since is left
        out; by a person, a name that is no asset is UNKNOWN_ASSET, as for ``croft run``. Nothing left to
        run is UNKNOWN_ASSET too, never an empty run that "succeeded"."""
        known = [n for n in dict.fromkeys(names) if n in self.facts]
        unknown = [n for n in dict.fromkeys(names) if n not in self.facts]
        if unknown and (run_id is None or not known):
            raise unknown_asset(unknown[0], self.facts, "run --due")
        if not known:
            raise CroftError(
                "USAGE",
                "croft run --due needs the assets to run, as the scheduler names them",
                "croft run --due ASSET... runs the named assets as the scheduler does.",
            )
        return known

    def requested(self, names: list[str]) -> list[str]:
        """Only ingests run whatever their state; a named transform runs if it is still stale."""
        return [n for n in names if self.facts[n].kind == "ingest"]

    def plan_holds(self, order: list[str], run_id: str) -> list[str]:
        """Hold what may not run now; returns the order without the held assets."""
        self.run_id = run_id
        leased = live_leases(self.conn, mine=run_id)
        kept = []
        for name in order:
            why = self._setting_hold() or self._pause_hold(name) or self._code_hold(self.facts[name])
            if why is None and name in leased:
                why = f"held: run {leased[name]} holds it; it stays due"
            if why:
                self.held[name] = why
            else:
                kept.append(name)
        return kept

    # -- 2. leases ----------------------------------------------------------------------------------------
    def lease_conflict(self, holders: list[Any]) -> set[str]:
        """Assets another run took after the plan: held, never waited for."""
        out = set()
        for h in holders:
            self.held[h.asset] = f"held: run {h.run_id} holds it; it stays due"
            out.add(h.asset)
        return out

    # -- 3. each step -------------------------------------------------------------------------------------
    def step_hold(self, name: str) -> str | None:
        """Re-check at the step's start, against the file as it is now."""
        why = self._setting_hold() or self._pause_hold(name)
        if why:
            return why
        fresh = self._reread(name)
        if fresh is not None:
            self.facts[name] = fresh
        return self._code_hold(self.facts[name]) or self._table_hold(self.facts[name])

    def attempt_started(self, name: str, run_id: str) -> None:
        """Record the attempt, and for an ingest the fire it handles, before any work."""
        moment = clock_now()
        columns: dict[str, str | datetime | None] = {"last_attempt_at": moment}
        facts = self.facts[name]
        if facts.kind == "ingest":
            fire = self._fire(name, run_id, moment)
            if fire:
                columns["last_fire_at"] = fire
        state.put_schedule_state(self.conn, name, **columns)

    # -- helpers -------------------------------------------------------------------------------------------
    def _setting_hold(self) -> str | None:
        now_state = effective_state(read_scheduling(self.conn), clock_now())
        return None if now_state == "on" else f"held: scheduling is {now_state}"

    def _pause_hold(self, name: str) -> str | None:
        """The asset paused by itself (``scheduler.pause``): held, as the tick holds it."""
        paused = active_pauses(read_pauses(self.conn), clock_now())
        if name not in paused:
            return None
        until = paused[name]
        return f"held (SCHEDULE_PAUSED): {asset_pause_hold_words(name, until, until)[0]}"

    def _code_hold(self, facts: AssetFacts) -> str | None:

        try:
            digest: str | None = code_hash(self.project, facts)
        except CroftError:
            digest = None
        row = state.get_schedule_state(self.conn, facts.name) or {}
        info = AssetInfo(name=facts.name, kind=facts.kind, code_hash=digest, loads=facts.ok)
        hold = approval_hold(info, row.get("approved_code_hash"), clock_now(), self.project.config.timezone)
        return f"held (SCHEDULE_HELD): {hold.reason}" if hold else None

    def _table_hold(self, facts: AssetFacts) -> str | None:
        """An incremental ingest whose rows are gone from its table is held, not run from its old cursor;
        the first run to find it tells once."""

        if facts.kind != "ingest" or not facts.incremental:
            return None
        name = facts.name
        seen = observe(self.project.config.database, [name]).get(name)
        found = table_problem(name, "ingest", True, catalog.get_entry(self.conn, name), seen)
        if found is None or not lost_rows(found):
            return None
        last_ok = last_ok_starts(self.conn, [name]).get(name)
        if tableholds.note(self.conn, name, found, last_ok):
            run_id = self.run_id or ""
            notify_scheduled_failure(self.project, run_id, [Failed(name, found.to_dict())], conn=self.conn)
        fix = (found.fix or {}).get("command")
        return f"held ({found.code}): {found.message}; {fix} loads it again"

    def _reread(self, name: str) -> AssetFacts | None:

        old = self.facts[name]
        if not old.path.is_file():
            return None
        if old.path.suffix == ".sql":
            return read_sql_facts(old.path, name, old.rel)
        return read_python_facts(old.path, name, old.rel)

    def _fire(self, name: str, run_id: str, moment: datetime) -> str | None:
        """The fire the tick noted for this run, else the schedule's latest fire now."""

        for note in state.get_setting(self.conn, SPAWNED_KEY) or []:
            if note.get("runId") == run_id:
                rec = (note.get("fires") or {}).get(name)
                if rec and rec.get("fire"):
                    return str(rec["fire"])
        schedule = self.facts[name].schedule
        if not schedule:
            return None

        parsed = parse_schedule(schedule)
        if not isinstance(parsed, Schedule):
            return None
        latest = cron.latest_fire_at_or_before(parsed.spec, self.project.config.timezone, moment)
        return to_iso(latest) if latest else None


def _fault_before_run() -> None:
    """Crash tests: ``CROFT_FAULT=before_run`` kills a scheduled run before it records anything."""

    if "before_run" in knobs.value("CROFT_FAULT"):
        os.kill(os.getpid(), signal.SIGKILL)


def due_run(project_dir: str | None, assets: list[str], run_id: str | None, argv: list[str]) -> Any:
    """``croft run --due A B``: the normal runner with the scheduler's rules; a refusal before the run
    is recorded is left in the run's log folder for the next tick to read."""

    held = adopt(slots.home(), os.environ)  # the slots its tick handed it, kept until this process exits
    _fault_before_run()
    try:
        return _due_run(project_dir, assets, run_id, argv, held)
    finally:
        end_own_group()  # the run is over: so is whatever its asset code left running in its group


def _due_run(
    project_dir: str | None, assets: list[str], run_id: str | None, argv: list[str], held: tuple[Lock, ...]
) -> Any:
    try:
        project = load_project(Path(project_dir) if project_dir else None)
        options = RunOptions(
            selectors=assets, trigger="schedule", human=False, argv=argv, run_id=run_id, due_rules=DueRules
        )
        result = run_assets(project, options)
        after_run(run_id or str(result.data.get("runId")), held)  # its slots go to the next groups at once
        return result
    except CroftError as exc:
        if run_id:
            try:
                root = Path(project_dir) if project_dir else find_root()
                try:
                    state_dir = load_project(root).config.state_dir
                except CroftError:
                    state_dir = root / ".croft"
                target = not_started_path(state_dir, run_id)
                write_atomic(target, exc.problem.to_dict(), indent=None)
            except (OSError, CroftError):
                pass
        raise
