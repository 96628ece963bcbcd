"""The flight plan: the due policy replayed on a moved clock, with nothing run. Pure.

``croft schedule simulate`` hands in the project's facts as the tick reads them (``DueInput``) and
this module steps the clock forward fire by fire: at each whole minute a tick could act (the next
release by ``due.next_look``, the end of a run) it asks ``due.due_work`` what is due, exactly as the
tick does, and admits the groups under the per-user cap and the pools. A started run records its fire
and counts as a success, and takes the asset's recent median duration (``DEFAULT_RUN_S`` when unknown),
which is what makes queue waits. Only this project's runs count against the cap: other projects' runs
are not known ahead. Transforms run inside their inputs' runs, so only ingests start here.

Pools (``pool_admission``) follow the stated rule: at most N of a pool run at once for this user, and
the groups waiting for one start in fire order. It is a function of its own so the tick's pool code and
this plan share the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

from croft.core.clock import parse_instant, to_iso
from croft.schedule import cron, release
from croft.scheduler.due import DueInput, due_work, next_look, release_policy

if TYPE_CHECKING:
    from typing import Any

__all__ = ["DEFAULT_RUN_S", "Plan", "Run", "SimInput", "pool_admission", "simulate"]

DEFAULT_RUN_S = 30.0  # a run croft has no duration for: under a minute, as most ingests take
_MINUTE = timedelta(minutes=1)


class SimInput(NamedTuple):
    given: DueInput  # the facts at the start, as the tick gathers them (``given.now``: where it starts)
    until: datetime
    durations: Mapping[str, float]  # asset -> seconds a run of it takes
    cap: int  # the per-user cap on scheduled runs at once
    pools: Mapping[str, int] = {}  # pool -> how many of it may run at once
    pool_of: Mapping[str, str] = {}  # asset -> its pool
    hosts: Mapping[str, tuple[str, ...]] = {}  # ingest -> the upstream hosts its file names


class Run(NamedTuple):
    assets: tuple[str, ...]
    fires: dict[str, str]  # asset -> the fire it handles
    released: str  # when the latest of those fires was let go (jitter, quiet hours, a pause's end)
    start: str  # the minute a tick (or a freed slot) starts it
    end: str
    waited_s: float  # from its release to its start: the next whole minute, the cap and the pools
    why: tuple[str, ...]  # what moved it: jitter, quiet hours, coalesced fires, a pause, the queue


class Plan(NamedTuple):
    runs: list[Run]
    holds: list[dict[str, Any]]
    deferred: list[dict[str, Any]]
    dst: list[dict[str, Any]]
    breaches: list[dict[str, Any]]
    hosts: dict[str, dict[str, int]]


def pool_admission(
    waiting: Sequence[Sequence[str]],
    running: Mapping[str, int],
    sizes: Mapping[str, int],
    pool_of: Mapping[str, str],
) -> list[bool]:
    """For each waiting group in fire order, whether its pools let it start now: at most ``sizes[pool]``
    groups holding an asset of a pool run at once (``running``: how many run now, per pool). A group
    admitted here takes its place before the next one is asked, so two of a pool of 1 never both start."""
    taken = dict(running)
    out = []
    for group in waiting:
        pools = {pool_of[a] for a in group if a in pool_of and pool_of[a] in sizes}
        ok = all(taken.get(p, 0) < sizes[p] for p in pools)
        if ok:
            for p in pools:
                taken[p] = taken.get(p, 0) + 1
        out.append(ok)
    return out


def _ceil_minute(at: datetime) -> datetime:
    floor = at.replace(second=0, microsecond=0)
    return floor if floor == at else floor + _MINUTE


class _Sim:
    def __init__(self, sim: SimInput):
        self.sim = sim
        g = sim.given
        self.g = g
        # transforms run inside their inputs' runs; a transform that reads nothing never follows one
        self.assets = {n: i for n, i in g.assets.items() if i.kind == "ingest" or i.inputs}
        self.state = {name: dict(row) for name, row in g.state.items()}
        self.last_ok = dict(g.last_ok)
        self.running: list[tuple[datetime, tuple[str, ...]]] = []
        self.runs: list[Run] = []
        self.holds: dict[str, dict[str, Any]] = {}
        self.deferred: list[dict[str, Any]] = []
        self.waiting = False  # a due group was left waiting for a slot or its pool
        self.blocked = False  # a due asset was held by its own run still going
        self.queued: set[str] = set()  # assets of groups left waiting (a queue wait, not a jitter)

    def given_at(self, now: datetime) -> DueInput:
        g = self.g
        leases = {a: "simulated" for _end, group in self.running for a in group}
        return DueInput(
            assets=self.assets,
            now=now,
            tz=g.tz,
            setting=g.setting,
            state=self.state,
            catalog={},  # transforms follow their inputs' runs here: never due on their own
            last_ok=self.last_ok,
            large_reprocess=g.large_reprocess,
            leases=leases,
            next_fires=False,
            tables=g.tables,
            pauses=g.pauses,
            jitter_s=g.jitter_s,
            quiet=g.quiet,
        )

    def pools_running(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _end, group in self.running:
            for p in {self.sim.pool_of[a] for a in group if a in self.sim.pool_of}:
                out[p] = out.get(p, 0) + 1
        return out

    def decide(self, now: datetime, fresh: bool) -> None:
        """One tick at ``now``: what is due, held, started or left waiting. ``fresh``: a minute's tick
        (holds are noted); else a freed slot's tick, which starts only what was waiting."""
        work = due_work(self.given_at(now))
        # something due waits for a run of its own to end: the first tick after that end looks again
        self.blocked = any(hold.kind in ("leased", "starting") for _name, hold in work.held)
        if fresh:
            for name, hold in work.held:
                if hold.kind in ("leased", "starting"):
                    continue
                noted = self.holds.setdefault(
                    name, {"asset": name, "code": hold.code, "reason": hold.reason, "since": to_iso(now)}
                )
                noted["until"] = hold.until
                noted["lastSeen"] = to_iso(now)
        groups = sorted(work.groups, key=lambda grp: min(work.fires.get(a, "~") for a in grp))
        if not fresh:  # a freed slot's tick: what was waiting, not a fire released since the minute began
            groups = [grp for grp in groups if self.queued.intersection(grp)]
        room = self.sim.cap - len(self.running)
        admitted = pool_admission(groups, self.pools_running(), self.sim.pools, self.sim.pool_of)
        self.waiting = False
        for group, ok in zip(groups, admitted, strict=True):
            if not ok or room <= 0:
                self.waiting = True
                self.queued.update(group)
                continue
            room -= 1
            self.start(tuple(group), work, now)

    def start(self, group: tuple[str, ...], work: Any, now: datetime) -> None:
        fires = {a: work.fires[a] for a in group if a in work.fires}
        seconds = sum(self.sim.durations.get(a, DEFAULT_RUN_S) for a in group)
        end = now + timedelta(seconds=seconds)
        released, why = self.released(group, fires, work, now)
        for a, fire in fires.items():
            self.state.setdefault(a, {})["last_fire_at"] = fire
        for a in group:
            self.last_ok[a] = to_iso(now)
        self.running.append((end, group))
        waited = float(round(max(0.0, (now - released).total_seconds())))
        if self.queued.intersection(group):
            why = (*why, f"waited {round(waited / 60)} min for a slot or its pool")
        self.queued.difference_update(group)
        self.runs.append(Run(group, fires, to_iso(released), to_iso(now), to_iso(end), waited, why))

    def released(
        self, group: tuple[str, ...], fires: Mapping[str, str], work: Any, now: datetime
    ) -> tuple[datetime, tuple[str, ...]]:
        """When the group's fires were let go, and what moved them."""
        g = self.g
        why: list[str] = []
        ats: list[datetime] = []
        for a, fire_text in fires.items():
            info = self.assets[a]
            spec = info.spec or cron.parse_cron(info.cron or "")
            policy = release_policy(info, g.jitter_s, g.quiet)
            fire = parse_instant(fire_text)
            at = release.release_at(a, spec, g.tz, fire, policy)
            jittered = release.release_at(a, spec, g.tz, fire, release.Policy(policy.jitter_s))
            if jittered > fire:
                why.append(f"{a}: jitter {int((jittered - fire).total_seconds())} s")
            missed = work.views[a].missed
            if missed > 1:
                why.append(f"{a}: {missed} fires run once")
            quieted = self.quieted(a, spec, policy, fire)
            if at > jittered or quieted:
                why.append(f"{a}: quiet hours held {len(quieted) or 1} fire(s)")
                self.deferred += [
                    {"asset": a, "fire": f, "runsAt": to_iso(now)} for f in quieted or [fire_text]
                ]
            pause = g.pauses.get(a) or {}
            if pause.get("until") and parse_instant(str(pause["until"])) > at:
                at = parse_instant(str(pause["until"]))
                why.append(f"{a}: paused until {to_iso(at)}")
            ats.append(at)
        return min(ats, default=now), tuple(why)

    def quieted(self, name: str, spec: Any, policy: release.Policy, fire: datetime) -> list[str]:
        """The fires since the last one handled, up to ``fire``, that quiet hours held back."""
        if not policy.quiet:
            return []
        last = self.state.get(name, {}).get("last_fire_at") or self.last_ok.get(name)
        if not last:
            return []
        g = self.g
        bare = release.Policy(policy.jitter_s)
        return [
            to_iso(f)
            for f, at in release.released_fires(name, spec, g.tz, parse_instant(str(last)), fire, policy)
            if at > release.release_at(name, spec, g.tz, f, bare)
        ]

    def run(self) -> None:
        t = _ceil_minute(self.g.now)
        until = self.sim.until
        while t <= until:
            self.finish(t)
            self.decide(t, fresh=True)
            t = self.next_tick(t)
        # the last minute's runs end, and what waited for them starts within that minute, as it does after
        # the last tick
        self.finish(until + _MINUTE - timedelta(microseconds=1))

    def finish(self, upto: datetime) -> None:
        """Runs ending by ``upto`` free their slots; what was waiting starts at each end, as a run that
        ends ticks the projects its slot is for."""
        while self.running:
            self.running.sort()
            end, _group = self.running[0]
            if end > upto:
                return
            self.running.pop(0)
            if self.waiting:  # only then does a freed slot start anything before the next minute
                self.decide(end if end < upto else upto, fresh=False)

    def next_tick(self, t: datetime) -> datetime:
        """The next whole minute at which a tick could start something."""
        ends = [end for end, _group in self.running]
        candidates = [_ceil_minute(max(min(ends), t + _MINUTE))] if self.blocked and ends else []
        nxt = next_look(self.given_at(t))
        if nxt is not None:
            candidates.append(_ceil_minute(max(nxt, t + _MINUTE)))
        return min(candidates, default=self.sim.until + _MINUTE)


def simulate(sim: SimInput) -> Plan:
    """Every run the scheduler would start from ``sim.given.now`` to ``sim.until``, with what it held."""
    s = _Sim(sim)
    s.run()
    return Plan(
        runs=s.runs,
        holds=_held_fires(sim, s.holds),
        deferred=s.deferred,
        dst=_dst(sim),
        breaches=_breaches(sim, s.runs),
        hosts=_hosts(sim, s.runs),
    )


def _held_fires(sim: SimInput, holds: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each hold with ``fires``: how many of an ingest's fires it kept from running (the one due when it
    was first seen, and each released after, while it held)."""
    g = sim.given
    out = []
    for name, hold in sorted(holds.items()):
        info = g.assets[name]
        item = {k: v for k, v in hold.items() if k != "lastSeen"}
        if info.kind == "ingest" and info.cron:
            spec = info.spec or cron.parse_cron(info.cron)
            policy = release_policy(info, g.jitter_s, g.quiet)
            since, seen = parse_instant(hold["since"]), parse_instant(hold["lastSeen"])
            later = release.released_fires(name, spec, g.tz, since, seen, policy)
            item["fires"] = 1 + sum(1 for _f, at in later if at <= seen)
        out.append(item)
    return out


def _dst(sim: SimInput) -> list[dict[str, Any]]:
    """The fires a daylight-saving change moved or kept twice, per ingest."""
    g = sim.given
    out = []
    for name, info in sorted(g.assets.items()):
        if info.kind != "ingest" or not info.cron:
            continue
        spec = info.spec or cron.parse_cron(info.cron)
        after = g.now
        while True:
            fires = cron.fires_with_notes(spec, g.tz, after, 200)
            for fire in fires:
                if fire.at > sim.until:
                    break
                if fire.note is not None:
                    note = fire.note
                    out.append(
                        {"asset": name, "fire": to_iso(fire.at), "kind": note.kind, "walls": list(note.walls)}
                    )
            if not fires or fires[-1].at > sim.until or len(fires) < 200:
                break
            after = fires[-1].at
    return out


def _breaches(sim: SimInput, runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Ingests whose promise (``fresh_within``) the plan breaks: a gap between successes longer than it."""
    out = []
    for name, info in sorted(sim.given.assets.items()):
        within = info.fresh_within_s
        if info.kind != "ingest" or not within:
            continue
        starts = [parse_instant(r.start) for r in runs if name in r.assets]
        first = sim.given.last_ok.get(name)
        marks = ([parse_instant(first)] if first else []) + starts
        for before, after in zip(marks, [*marks[1:], sim.until], strict=True):
            if (after - before).total_seconds() > within:
                out.append(
                    {"asset": name, "at": to_iso(before + timedelta(seconds=within)), "withinS": within}
                )
    return out


def _hosts(sim: SimInput, runs: Sequence[Run]) -> dict[str, dict[str, int]]:
    """Runs calling each upstream host, per hour (UTC): each run makes at least one request there."""
    out: dict[str, dict[str, int]] = {}
    for r in runs:
        hour = r.start[:13] + ":00Z"
        for host in sorted({h for a in r.assets for h in sim.hosts.get(a, ())}):
            out.setdefault(host, {})
            out[host][hour] = out[host].get(hour, 0) + 1
    return out


def plan_json(plan: Plan, sim: SimInput) -> dict[str, Any]:
    """``croft schedule simulate --json``'s data."""
    return {
        "from": to_iso(sim.given.now),
        "until": to_iso(sim.until),
        "timezone": sim.given.tz,
        "cap": sim.cap,
        "runs": [
            {
                "assets": list(r.assets),
                "fires": r.fires,
                "releasedAt": r.released,
                "startAt": r.start,
                "endsAt": r.end,
                "waitedS": r.waited_s,
                "why": list(r.why),
            }
            for r in plan.runs
        ],
        "holds": plan.holds,
        "deferred": plan.deferred,
        "dst": plan.dst,
        "breaches": plan.breaches,
        "requestsPerHostHour": plan.hosts,
        "assumed": {
            "runSeconds": {
                a: sim.durations.get(a, DEFAULT_RUN_S)
                for a, i in sorted(sim.given.assets.items())
                if i.kind == "ingest" and i.cron
            },
            "otherProjects": "their runs are not counted against the cap",
        },
    }
