"""The project tick: once a minute, decide what is due and start one detached run per group.

Order matters and is the contract: the on/off/paused check comes before anything is written (no
heartbeat when off or paused); then the per-project singleton (a second tick exits, a dead holder is
taken over); the heartbeat; reconcile of dead runs; settling the runs earlier ticks started; the due
decision; and for each group, the fire and the attempt are recorded together with a note of the run in
ONE transaction before the child is spawned, so a racing or crashing tick can never run a fire twice.

The tick plans and spawns only. It never imports asset code and reads an asset file only when its
``stat`` key moved (``scheduler.tick.factcache``); it imports no httpx, difflib or asset file reader
when nothing changed.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from croft.core import disk, when
from croft.core.children import croft_env
from croft.core.clock import parse_instant, to_iso
from croft.core.identity import current
from croft.core.problems import CroftError, Problem, problem
from croft.engine.catalog import mirror
from croft.engine.reconcile import reconcile
from croft.engine.warehouse import Warehouse
from croft.history.db import open_history
from croft.history.runid import new_run_id
from croft.history.state import claim_tick, delete_setting, put_setting, read_tick, release_tick, write_tick
from croft.notify.send import ping_after_tick
from croft.project.config import Project
from croft.project.rules import pool_in_config
from croft.scheduler.due import RETRY_BACKOFF, DueInput, due_work, next_look
from croft.scheduler.heartbeat import last_awake
from croft.scheduler.setting import effective_state, read_scheduling, read_scheduling_file
from croft.scheduler.tick import slots, start
from croft.scheduler.tick.ceiling import deadline_for, enforce_ceilings
from croft.scheduler.tick.clockback import settle_clock
from croft.scheduler.tick.factcache import cached_deps, load_facts
from croft.scheduler.tick.failure import tick_failed, tick_succeeded
from croft.scheduler.tick.gather import due_input, landed_writes, latest_steps
from croft.scheduler.tick.handoff import pass_on
from croft.scheduler.tick.memo import MEMO_KEY, make_memo
from croft.scheduler.tick.report import held, never_fires, tick_data
from croft.scheduler.tick.rungroup import end_group
from croft.scheduler.tick.settle import (
    FailedStart,
    apply_settled,
    forget_spawn,
    note_child,
    note_spawn,
    settle,
    tidy_reported,
)
from croft.scheduler.tick.slotlocks import Lock, let_go
from croft.scheduler.tick.slow import Slow, claim_slow, tell_slow
from croft.scheduler.tick.tell import tell_after_tick
from croft.scheduler.ticklog import TickLog

__all__ = ["project_tick"]

LEFTOVER_GRACE_S = 1.0  # a crashed run's leftovers get SIGTERM, then SIGKILL this much later


def _crash_warning(state_rel: str, run_id: str, assets: tuple[str, ...], why: str, again: str) -> Problem:
    them = "it stays due" if len(assets) == 1 else "they stay due"
    return problem(
        "RUN_CRASHED",
        f"the scheduled run {run_id} did not start {', '.join(assets)}: {why}",
        f"croft logs --runs shows the scheduled runs; {state_rel}/logs/{run_id}/process.log has what it"
        f" printed. {them[0].upper()}{them[1:]}; {again}",
        severity="warning",
        details={"runId": run_id, "assets": list(assets)},
    )


def _refresh_catalog(project: Project, conn: Any, assets: list[str], infos: dict[str, Any]) -> None:
    """Re-mirror what a crashed run may have committed (only then is the warehouse code imported)."""

    if not project.config.database.exists():
        return
    warehouse = Warehouse(project.config.database)
    try:
        mirror(conn, warehouse, {a: infos[a].kind for a in assets if a in infos})
    finally:
        warehouse.close()


def project_tick(
    project: Project,
    now: datetime,
    *,
    ping: bool = True,
    log_name: str | None = None,
    spare: list[Lock] | None = None,
) -> tuple[dict[str, Any], list[Problem]]:
    """Run one tick of ``project`` at ``now``; returns the ``croft tick --json`` data and its problems.

    ``ping``: send the dead-man's-switch ping after a completed tick (``croft tick --all`` sends the
    pings of the ticks it hands to a worker itself, all at once). ``log_name``: the project's name in the
    tick log (``croft tick --log-as``); by hand, its whole path. ``spare``: the slots of the scheduled
    run ticking here as it ends (``scheduler.tick.afterrun``): the runs started get them first, and begin
    only once that run has exited."""

    started = time.perf_counter()
    data = tick_data("full")
    problems: list[Problem] = []
    state_dir = project.config.state_dir
    state_now = effective_state(read_scheduling_file(state_dir), now)
    if state_now != "on":
        data["exited"] = state_now
        data["tookMs"] = int((time.perf_counter() - started) * 1000)
        return data, problems

    try:
        conn = open_history(state_dir)
        who = current()
        try:
            if claim_tick(conn, who) is not None:
                data["exited"] = "busy"
                return data, problems
            try:
                previous = (read_tick(conn) or {}).get("heartbeat_at")
                data["heartbeatAt"] = to_iso(now)
                write_tick(conn, who, data["heartbeatAt"])
                slow: list[Slow] = []
                failed_starts = _work(project, conn, now, data, problems, previous, log_name, slow, spare)
            finally:
                release_tick(conn, who)
            _tell(project, conn, now, failed_starts, slow)
        finally:
            conn.close()
            data["tookMs"] = int((time.perf_counter() - started) * 1000)
    except Exception as exc:  # scheduling is on and the tick failed: an incident, never a quiet heartbeat
        tick_failed(project, exc, now)
        raise
    tick_succeeded(project)
    if ping:
        ping_after_tick(project)  # a completed tick only: an early exit (off, paused, busy) returned above
    return data, problems


def _tell(
    project: Project, conn: Any, now: datetime, failed_starts: list[tuple[Any, Problem]], slow: list[Slow]
) -> None:
    """Failed starts, crashed scheduled runs and slow ones are notified after the singleton is released,
    so a slow webhook never makes the next minute's tick find this one still holding it."""

    tell_after_tick(project, conn, now, failed_starts)
    tell_slow(project, slow)


def _work(
    project: Project,
    conn: Any,
    now: datetime,
    data: dict[str, Any],
    problems: list[Problem],
    previous: str | None = None,
    log_name: str | None = None,
    slow: list[Slow] | None = None,
    spare: list[Lock] | None = None,
) -> list[tuple[Any, Problem]]:
    """Returns the failed starts found or made, each with the problem reported for it (to notify);
    ``slow`` gains the slow steps this tick claimed (to notify too)."""

    tz = project.config.timezone
    state_dir = project.config.state_dir
    state_rel = _rel(project)
    infos, _read = load_facts(conn, project)
    if _anything_to_reconcile(conn):
        problems.extend(enforce_ceilings(project, conn, now))  # before reconcile: past its ceiling is TIMEOUT
        if slow is not None:  # after the ceiling: a run it just ended is a failure, not slow
            slow.extend(claim_slow(conn, infos, now))
    if _anything_to_reconcile(conn):
        reconcile(conn, lambda assets: _refresh_catalog(project, conn, assets, infos))
    settled = settle(conn, state_dir, now)
    apply_settled(conn, settled)
    tidy_reported(state_dir, settled)
    for ended in settled.ended:  # what a run that crashed or was killed left running ends with it
        end_group(ended, LEFTOVER_GRACE_S)
    told: list[tuple[Any, Problem]] = []
    for failure in settled.new_failures:
        again = f"it runs again after {_words(failure, now, tz)}"
        problems.append(_crash_warning(state_rel, failure.run_id, failure.assets, failure.reason, again))
        told.append((failure, problems[-1]))
    latest = latest_steps(conn, infos)
    given = due_input(
        conn,
        infos,
        now=now,
        tz=tz,
        setting=read_scheduling(conn),
        starting=settled.starting,
        failed_starts=settled.failed_starts,
        landed=landed_writes(project.config.database, latest),
        latest=latest,
        next_fires=False,
        database=project.config.database,
        jitter_s=project.config.jitter_s,
        quiet=project.config.quiet,
    )
    work = due_work(given)
    moved = settle_clock(project, conn, now, previous, work.ahead)
    if moved is not None:
        problems.append(moved)
    data["held"] = [held(asset, hold.code, f"{asset}: {hold.reason}", hold.hint) for asset, hold in work.held]
    never = never_fires(work)  # SCHEDULE_INVALID: said every tick, and kept in the memo for the idle ones
    data["held"] += never
    env = croft_env()
    awake = last_awake(previous, project.config.state_dir, now)  # idle minutes count as the machine awake
    unsized, pool_holds = _unsized(project, work, infos)
    data["held"] += pool_holds
    grant = _grant(project, conn, work, infos, now, awake, log_name or str(project.root), spare, unsized)
    if grant.wake_line:
        data["woke"] = grant.wake_line
    for want in grant.waiting:
        data["held"] += [
            _waiting(asset, grant.reason(want), work.views[asset].reason or "") for asset in want.group
        ]
    followers = [n for n, v in work.views.items() if v.due and not v.primary]
    for want, locks in grant.start:
        group = want.group
        run_id = new_run_id(now, tz, conn)
        fires = {a: work.fires[a] for a in group if a in work.fires}
        deadline = deadline_for([*group, *followers], infos, project, now)
        note_spawn(conn, run_id, group, now, fires, group, deadline=deadline)
        try:
            child = start.start_due_run(
                project.root, state_dir, run_id, group, env, locks, after_me=spare is not None
            )
        except OSError as exc:
            slots.release(slots.home(), locks)
            machine = disk.os_problem(exc, f"starting the scheduled run of {', '.join(group)}")
            if machine is not None:  # its state folder cannot take the run's log: not a start to retry in
                forget_spawn(conn, run_id, None)  # 15 min, but the tick's failure (an incident, told once)
                raise CroftError(machine) from exc
            why = f"it could not be started: {exc.strerror or exc}"
            failure = FailedStart(run_id, tuple(group), to_iso(now), why)
            forget_spawn(conn, run_id, failure)
            problems.append(
                problem(
                    "INTERNAL_ERROR",
                    f"the scheduler could not start the run of {', '.join(group)}: {exc.strerror or exc}",
                    f"it stays due; the scheduler tries again after {_words(failure, now, tz)}",
                    severity="warning",
                    details={"runId": run_id},
                )
            )
            told.append((failure, problems[-1]))
            continue
        slots.attach(slots.home(), locks, child)
        let_go(locks)  # the run holds them now, alone
        note_child(conn, run_id, child)
        data["spawned"].append({"runId": run_id, "assets": group, "reason": work.group_reason(group)})
    pass_on(grant.kick, now, "a slot is free for its waiting groups")
    waiting = len(data["held"]) > len(never)
    idle = not (data["spawned"] or waiting or problems or settled.still or settled.failed_starts)
    _leave_memo(project, conn, now, given if idle else None, never)
    return told


def _leave_memo(
    project: Project, conn: Any, now: datetime, given: DueInput | None, never: list[dict[str, str]]
) -> None:
    """After a tick that found nothing to do, the memo that lets the next ticks only beat (``idle``) until
    the decision's next instant (``due.next_look``: a release, a pause's end); after any other tick, none."""

    if given is None:
        delete_setting(conn, MEMO_KEY)
        return
    nxt = next_look(given)
    until = to_iso(nxt) if nxt is not None else "9999-12-31T23:59:59.999Z"
    config_text = (project.root / "croft.json").read_text(encoding="utf-8")
    memo = make_memo(conn, str(project.root), config_text, to_iso(now), until, cached_deps(conn), never)
    put_setting(conn, MEMO_KEY, memo)


def _unsized(
    project: Project, work: Any, infos: dict[str, Any]
) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """The due groups an asset of which names a pool croft.json does not size (``rules.pool_in_config``,
    the rule validate and run apply too), and a hold for each of those assets: they never start unsized."""
    groups, holds = [], []
    for group in work.groups:
        found = [
            (a, p)
            for a in group
            if a in infos
            for p in [pool_in_config(a, a, infos[a].pool, project.config.pools)]
            if p is not None
        ]
        if found:
            groups.append(group)
            holds += [held(a, p.code, p.message, p.hint) for a, p in found]
    return groups, holds


def _grant(
    project: Project,
    conn: Any,
    work: Any,
    infos: dict[str, Any],
    now: datetime,
    previous: str | None,
    name: str,
    spare: list[Lock] | None,
    unsized: list[list[str]],
) -> Any:
    """Which due groups start now under the per-user cap and the pools (``scheduler.tick.slots``); a
    wake is logged once."""

    sizes = project.config.pools
    wants = [
        slots.Want(
            group,
            min((work.fires[a] for a in group if a in work.fires), default=to_iso(now)),
            {p: sizes[p] for a in group if a in infos for p in [infos[a].pool] if p},
        )
        for group in work.groups
        if group not in unsized
    ]
    asleep = None
    if previous and wants:
        gap = now - parse_instant(previous)
        setting = read_scheduling(conn)
        since = setting.since
        # a pause that ended since the last tick is a quiet the person asked for, not the machine asleep
        paused = (
            setting.state == "paused" and bool(setting.paused_until) and str(setting.paused_until) > previous
        )
        if gap > slots.WAKE_GAP and (since is None or since <= previous) and not paused:
            asleep = gap
    if not wants:  # nothing to start: leave the queue at once, and pass this project's turn on
        grant = slots.Grant()
        grant.kick = slots.withdraw(slots.home(), str(project.root), now)
        return grant
    grant = slots.take(slots.home(), str(project.root), wants, now, current(), asleep=asleep, spare=spare)
    if grant.wake_line:
        TickLog.of(slots.home()).write(to_iso(now), f"{name}: {grant.wake_line}")
    return grant


def _waiting(asset: str, why: str, reason: str) -> dict[str, Any]:
    message = f"{asset}: {why}; it stays due ({reason}) and starts at a next tick"
    return held(
        asset,
        "ASSET_BUSY",
        message,
        "croft schedule status shows the queue; croft logs --runs shows the scheduled runs",
    )


def _anything_to_reconcile(conn: Any) -> bool:
    """Reconcile writes; an idle tick skips it when no run is recorded running and no lease is held."""
    row = conn.execute(
        "SELECT EXISTS(SELECT 1 FROM runs WHERE status = 'running') OR EXISTS(SELECT 1 FROM leases)"
    ).fetchone()
    return bool(row[0])


def _words(failure: Any, now: datetime, tz: str) -> str:

    return when.clock(parse_instant(failure.at) + RETRY_BACKOFF, now)


def _rel(project: Project) -> str:
    try:
        return project.config.state_dir.relative_to(project.root).as_posix()
    except ValueError:
        return str(project.config.state_dir)
