"""What is due, why, and what holds it: the scheduler's policy as one pure function of facts and a clock.

Nothing here reads a file, the database or the clock; the tick, ``croft status`` and ``croft run --due``
gather the facts and pass ``now`` in, so every rule is tested by handing in data. Three ideas carry it:

- a fire is handled once: an ingest is due when its latest fire is later than both the last fire the
  scheduler handled and the start of its last successful step (a run by hand covers the fire before it);
  missed fires coalesce into one run; a fire counts from its release (``schedule.release``: its jitter, then
  out of quiet hours), and ``next_look`` names the next instant the clock alone can change the answer;
- a held asset is not started but stays due, so it runs at the first tick after its hold lifts (one asset
  paused by itself is such a hold, ``scheduler.pause``);
- due assets are grouped by connected components of the whole asset graph: one run per group;
- the clock decides: a handled fire stamped more than ``heartbeat.AHEAD_LIMIT`` ahead of the clock (the
  clock moved back since, or a tick ran with a ``CROFT_NOW`` ahead) counts as covering the fires up to
  now and no further, so the next fire by today's clock runs. ``DueWork.ahead`` names those marks; the
  tick writes the correction and tells of it once (CLOCK_MOVED_BACK).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from croft.core import when
from croft.core.clock import parse_instant, to_iso
from croft.core.problems import CODES, Problem, problem
from croft.engine.staleness import data_version, stale_reasons
from croft.project.graph import Graph
from croft.schedule import cron, release
from croft.scheduler.heartbeat import AHEAD_LIMIT
from croft.scheduler.pause import active_pauses, asset_pause_hold_words, pause_ends
from croft.scheduler.setting import Scheduling, effective_state

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MISSED_CAP",
    "RETRY_BACKOFF",
    "AssetInfo",
    "DueInput",
    "DueWork",
    "FailedStart",
    "Hold",
    "View",
    "approval_hold",
    "due_work",
    "edited_ago",
    "is_retryable",
    "next_look",
    "release_policy",
]

RETRY_BACKOFF = timedelta(minutes=15)
MISSED_CAP = 50
# Failures that are a person's choice or a refusal, not a server's bad minute: never retried on a timer.
_NOT_RETRIED = frozenset(
    {"INTERRUPTED", "ASSET_BUSY", "SHRINK_GUARD", "CONFIRMATION_STALE", "CONFIRMATION_REQUIRED"}
)
_FAILED = ("failed", "crashed", "interrupted")
_OK = ("ok", "unchanged")

_ON = Scheduling(state="on")

# hold kind -> the registered problem code it is reported with
HOLD_CODES = {
    "paused": "SCHEDULE_PAUSED",
    "asset_paused": "SCHEDULE_PAUSED",
    "SCHEDULE_HELD": "SCHEDULE_HELD",
    "LARGE_REPROCESS": "LARGE_REPROCESS",
    "leased": "ASSET_BUSY",
    "starting": "ASSET_BUSY",
    "backoff": "SCHEDULE_BACKOFF",
    "table_missing": "TABLE_MISSING",
    "table_changed": "TABLE_CHANGED",
}


@dataclass(frozen=True)
class AssetInfo:
    """An asset's static facts as the scheduler knows them (read from its text, never by running it).

    ``code_hash`` is the current fingerprint (None when unknown); ``zone_hash`` the fingerprint in
    ``zone_from``, the zone the facts were last read in, when the project's zone has changed since.
    """

    name: str
    kind: str  # ingest | sql | python
    incremental: bool = (
        False  # an ingest with a cursor (its table's fix is a full refresh: engine.tablehealth)
    )
    inputs: tuple[str, ...] = ()
    schedule: str | None = None
    cron: str | None = None
    code_hash: str | None = None
    loads: bool = True
    edited_at: str | None = None
    zone_from: str | None = None
    zone_hash: str | None = None
    max_runtime_s: float | None = None  # the asset's own ceiling for a scheduled run (scheduler.tick.ceiling)
    fresh_within_s: float | None = None  # its freshness promise (scheduler.freshness)
    slow_after_s: float | None = None  # a scheduled step running longer is told once (scheduler.tick.slow)
    jitter_s: float | None = None  # its own jitter (schedule.jitter); None: the project's
    quiet: tuple[str, ...] | None = None  # its own quiet hours (schedule.quiet); None: the project's
    pool: str | None = None  # the pool its scheduled runs wait for (scheduler.admit)
    spec: Any = None  # the parsed cron (cron.CronSpec) when known
    # SCHEDULE_INVALID (as a problem dict) when ``schedule`` is text the schedule language refuses: the
    # ingest never fires, and the tick, status and schedule status say so instead of staying quiet
    schedule_problem: dict[str, Any] | None = None


@dataclass(frozen=True)
class FailedStart:
    """A run an earlier tick spawned that never started these assets (its child died or refused)."""

    run_id: str
    assets: tuple[str, ...]
    at: str
    reason: str


@dataclass(slots=True)
class DueInput:
    """Everything the decision needs. Steps are runs.sqlite step rows as dicts (``run_id``, ``status``,
    ``started_at``, ``finished_at``, ``attempt``, ``error``, ``code_hash``, ``reason``)."""

    assets: Mapping[str, AssetInfo]
    now: datetime
    tz: str
    setting: Scheduling = _ON
    state: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    catalog: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    last_ok: Mapping[str, str] = field(default_factory=dict)
    latest: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    large_reprocess: frozenset[str] = frozenset()
    leases: Mapping[str, str] = field(default_factory=dict)  # asset -> run id of a live holder
    starting: Sequence[tuple[str, Sequence[str]]] = ()  # (run id, assets) of runs still starting
    failed_starts: Sequence[FailedStart] = ()
    # asset -> the last_fire_at to read instead of the stored one
    rollbacks: Mapping[str, str | None] = field(default_factory=dict)
    # views carry the next fire and the missed count (status); the tick skips them
    next_fires: bool = True
    # asset -> {code, message, since}: an incremental ingest whose table a scheduled run found
    # dropped or emptied (scheduler.tick.tableholds), held until a person loads it again
    tables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # asset -> {since, until}: one asset paused while its project runs (scheduler.pause)
    pauses: Mapping[str, Any] = field(default_factory=dict)
    # croft.json's jitter and quiet hours: each ingest's unless it sets its own
    jitter_s: float | None = None
    quiet: Sequence[str] = ()


@dataclass(frozen=True)
class Hold:
    # paused | asset_paused | SCHEDULE_HELD | LARGE_REPROCESS | leased | starting | backoff | table_*
    kind: str
    reason: str
    hint: str
    until: str | None = None

    @property
    def code(self) -> str:
        return HOLD_CODES[self.kind]

    def problem(self, asset: str) -> Problem:
        return problem(
            self.code,
            f"{asset} is held from the scheduler: {self.reason}",
            self.hint,
            severity="warning",
            asset=asset,
            details={"until": self.until} if self.until else None,
        )


@dataclass(slots=True)
class View:
    asset: str
    kind: str
    schedule: str | None
    cron: str | None
    next_fire_at: str | None
    last_fire_at: str | None
    last_attempt_at: str | None
    due: bool = False
    reason: str | None = None
    hold: Hold | None = None
    missed: int = 0
    primary: bool = False
    schedule_problem: dict[str, Any] | None = None  # SCHEDULE_INVALID: this ingest never fires

    def invalid(self) -> Problem | None:
        """The SCHEDULE_INVALID warning of an ingest whose schedule never fires, or None."""
        if not self.schedule_problem:
            return None
        found = Problem.from_dict(self.schedule_problem)
        return found.with_(
            severity="warning",
            asset=self.asset,
            message=f"{self.asset} never fires: {found.message}",
            hint=f"{found.hint.rstrip('.')}. Fix the schedule in {found.file or 'its file'};"
            " `croft validate` checks it.",
        )


@dataclass(slots=True)
class DueWork:
    views: dict[str, View]
    held: list[tuple[str, Hold]]
    groups: list[list[str]]
    fires: dict[str, str]  # ready ingest -> the fire its run handles
    # ingest -> (its stored last fire, the fire it is corrected to) when what it handled lies ahead of
    # the clock: the clock moved back
    ahead: dict[str, tuple[str | None, str]] = field(default_factory=dict)

    def group_reason(self, group: Sequence[str]) -> str:
        parts = [(a, self.views[a].reason or "") for a in group]
        return parts[0][1] if len(parts) == 1 else "; ".join(f"{a}: {r}" for a, r in parts)


# --------------------------------------------------------------------------------------------------------
# words


def edited_ago(edited_at: str | None, now: datetime) -> str | None:
    if not edited_at:
        return None
    seconds = (now - parse_instant(edited_at)).total_seconds()
    if seconds < 0:  # a file stamped after the clock (a clock set back): no age worth saying
        return None
    if seconds < 90:
        return f"{int(seconds)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 36 * 3600:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} days"


def is_retryable(error: Mapping[str, Any] | None) -> bool:
    """Whether a step's stored error is worth another try later (a server or the network, not the code)."""

    if not error:
        return False
    code = error.get("code")
    if code not in CODES or code in _NOT_RETRIED or CODES[code][0] == "project":
        return False
    return bool(error.get("retryable"))


def approval_hold(info: AssetInfo, approved: str | None, now: datetime, tz: str) -> Hold | None:
    """SCHEDULE_HELD: the code differs from the code a person last ran (or nobody ever ran it).

    The one rule the tick, status and ``croft run --due`` (at plan time and at each step's start) share.
    """
    name = info.name
    if info.code_hash is not None and info.code_hash == approved and info.loads:
        return None
    hint = (
        f"the scheduler only runs code a person has run; check the change, then croft run {name}"
        " releases it (croft preview shows what it would do first)"
    )
    if approved and info.loads and info.zone_from and info.zone_hash == approved:
        return Hold(
            "SCHEDULE_HELD",
            f"the project time zone changed ({info.zone_from} → {tz}) since it was last run"
            f" by hand; croft run {name} releases it",
            hint,
        )
    new = "" if approved else "new: "
    ago = edited_ago(info.edited_at, now)
    edited = f"code edited {ago} ago" if ago else "code edited"
    if not info.loads:
        reason = f"{new}{edited} and it does not load; fix it, then croft run {name} releases it"
    else:
        reason = f"{new}{edited}, not run by hand yet; croft run {name} releases it"
    return Hold("SCHEDULE_HELD", reason, hint)


def _at(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_instant(text)
    except ValueError:
        return None


def _later(a: str | None, b: str | None) -> str | None:
    """The later of two stored instants (compared as times: warehouse stamps and history times differ)."""
    da, db = _at(a), _at(b)
    if da is None:
        return b if db is not None else None
    if db is None:
        return a
    return a if da >= db else b


# --------------------------------------------------------------------------------------------------------
# the decision


class _Decider:
    def __init__(self, given: DueInput):
        self.g = given
        self.now = given.now.astimezone(UTC)
        self.assets = given.assets
        known = {n.lower(): n for n in self.assets}
        self.inputs: dict[str, tuple[str, ...]] = {}
        for name, info in self.assets.items():
            found = [known[i.lower()] for i in info.inputs if i.lower() in known and known[i.lower()] != name]
            self.inputs[name] = tuple(dict.fromkeys(found))
        self.graph = Graph(self.inputs)
        self.state_now = effective_state(given.setting, self.now)
        self.paused = active_pauses(given.pauses, self.now)
        self.views: dict[str, View] = {}
        self._holds: dict[str, Hold | None] = {}
        self._visiting: set[str] = set()
        self.starting = self._starting()

    def downstream(self, names: Sequence[str] | set[str]) -> set[str]:
        return self.graph.downstream(names)

    def _starting(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for run_id, assets in self.g.starting:
            for name in [*assets, *sorted(self.downstream(set(assets)))]:
                out.setdefault(name, run_id)
        return out

    def words(self, instant: str | datetime) -> str:
        return when.clock(instant, self.now)  # the reader's clock, as every screen shows an instant

    # -- primary due ------------------------------------------------------------------------------------
    def ingest(self, info: AssetInfo, view: View) -> None:
        if not info.cron:
            return
        spec = info.spec
        if spec is None:
            try:
                spec = cron.parse_cron(info.cron)
            except Exception:  # validate reports SCHEDULE_INVALID; the scheduler leaves it alone
                return
        policy = release_policy(info, self.g.jitter_s, self.g.quiet)
        latest, pending = release.due_fire(info.name, spec, self.g.tz, self.now, policy)
        if self.g.next_fires:
            nxt = release.next_release(info.name, spec, self.g.tz, self.now, policy, pending)
            view.next_fire_at = to_iso(nxt) if nxt else None
        if latest is None:
            return
        handled = self.handled(info.name, view.last_fire_at, latest)
        handled_at = _at(handled)
        if handled_at is not None and latest <= handled_at:
            return
        view.due = view.primary = True
        missed = 1
        if handled_at is not None:
            # most often one fire came since: look no further than two
            fires = release.fires_after(spec, self.g.tz, handled_at, 2)
            if len(fires) == 2 and fires[1] <= latest:
                fires = release.fires_after(spec, self.g.tz, handled_at, MISSED_CAP)
            missed = max(1, sum(1 for f in fires if f <= latest))
        view.missed = missed
        reason = f"fired at {self.words(latest)}"
        if missed > 1:
            count = f"{MISSED_CAP} or more" if missed >= MISSED_CAP else str(missed)
            reason += f"; {count} missed fires run once"
        view.reason = reason
        self.fires[info.name] = to_iso(latest)

    def handled(self, name: str, last_fire: str | None, latest: datetime) -> str | None:
        """The last fire handled, by today's clock. A mark far ahead of the clock (a fire recorded, or a
        run started, while the clock read later than it does now) covers the fires up to ``latest`` and
        no further: the next fire by the clock runs, none runs twice, and ``ahead`` keeps the correction
        for the tick to write. A successful run's start ahead, with a sound last fire, counts for nothing."""
        limit = self.now + AHEAD_LIMIT
        fire_at, ok = _at(last_fire), self.g.last_ok.get(name)
        ok_at = _at(ok)
        if (fire_at is not None and fire_at > limit) or (
            fire_at is None and ok_at is not None and ok_at > limit
        ):
            self.ahead[name] = (last_fire, to_iso(latest))
            return to_iso(latest)
        return _later(last_fire, ok if ok_at is None or ok_at <= limit else None)

    def transform(self, info: AssetInfo, view: View) -> None:
        catalog = self.g.catalog
        if any(i not in catalog for i in self.inputs[info.name]):
            return  # waits for that input; it follows the input's run
        reasons = stale_reasons(
            info.kind,
            catalog.get(info.name),
            info.code_hash,
            {i: catalog.get(i) for i in self.inputs[info.name]},
        )
        if reasons:
            view.due = view.primary = True
            view.reason = "stale: " + "; ".join(r.text() for r in reasons)

    # -- holds -----------------------------------------------------------------------------------------
    def hold(self, name: str) -> Hold | None:
        """The first hold that matches (memoised; a cycle of waits reads as no further hold)."""
        if name in self._holds:
            return self._holds[name]
        if name in self._visiting:
            return None
        self._visiting.add(name)
        try:
            found = self._hold(name)
        finally:
            self._visiting.discard(name)
        self._holds[name] = found
        return found

    def _hold(self, name: str) -> Hold | None:
        info, view = self.assets[name], self.views[name]
        g = self.g
        if self.state_now == "paused":
            # code nobody ran stays held when the pause ends: say that, never "runs when the pause ends"
            approval = self.approval(info)
            if approval:
                return approval
            paused_until = g.setting.paused_until
            when = f" until {self.words(paused_until)}" if paused_until else ""
            return Hold(
                "paused",
                f"scheduling is paused{when}; croft schedule on resumes it",
                "croft schedule on resumes scheduling for this project",
                paused_until,
            )
        approval = self.approval(info)
        if approval:
            return approval
        if name in self.paused:
            ends = self.paused[name]
            reason, hint = asset_pause_hold_words(name, ends, self.words(ends) if ends else None)
            return Hold("asset_paused", reason, hint, ends)
        lost = g.tables.get(name)
        if lost is not None and info.kind == "ingest":
            code = str(lost.get("code") or "TABLE_MISSING")
            return Hold(
                "table_changed" if code == "TABLE_CHANGED" else "table_missing",
                f"{lost.get('message') or 'its table is gone'}; croft run {name} --full-refresh loads it"
                " again",
                f"croft run {name} --full-refresh loads it from the source's beginning and releases it",
            )
        if name in g.large_reprocess:
            return Hold(
                "LARGE_REPROCESS",
                f"the cost guard needs a person: croft run {name} shows how many rows it would process"
                " and asks first",
                f"croft run {name} runs it and releases it",
            )
        if name in g.leases:
            return Hold(
                "leased",
                f"run {g.leases[name]} holds it; it stays due",
                "croft logs --runs shows that run; the scheduler runs it once that run lets go",
            )
        if name in self.starting:
            return Hold(
                "starting",
                f"the scheduled run {self.starting[name]} is starting; it stays due",
                "croft logs --runs shows the scheduled runs",
            )
        on_own = view.primary
        if info.kind != "ingest" or on_own:
            for failed in g.failed_starts:
                if name not in failed.assets:
                    continue
                until = parse_instant(failed.at) + RETRY_BACKOFF
                ok = _at(g.last_ok.get(name))
                if until > self.now and not (ok is not None and ok > parse_instant(failed.at)):
                    return Hold(
                        "backoff",
                        f"the scheduled run {failed.run_id} did not start it ({failed.reason});"
                        f" tries again after {self.words(until)}",
                        f"croft run {name} runs it now",
                        to_iso(until),
                    )
        if info.kind != "ingest" and on_own:
            return self.failure_backoff(info) or self.input_wait(info)
        return None

    def approval(self, info: AssetInfo) -> Hold | None:
        approved = (self.g.state.get(info.name) or {}).get("approved_code_hash")
        return approval_hold(info, approved, self.now, self.g.tz)

    def failure_backoff(self, info: AssetInfo) -> Hold | None:
        name = info.name
        step = self.g.latest.get(name)
        if not step or step.get("status") not in _FAILED:
            return None
        started = str(step["started_at"])
        if step.get("code_hash") and info.code_hash and step["code_hash"] != info.code_hash:
            return None
        if self.input_changed_since(name, started):
            return None
        error = step.get("error") or {}
        code = error.get("code") or str(step["status"]).upper()
        if step["status"] == "failed" and not is_retryable(error):
            return Hold(
                "backoff",
                f"failed at {self.words(started)} ({code}); waits for a change to its code or inputs,"
                f" or croft run {name}",
                f"croft logs {name} --failed shows why; croft run {name} runs it now",
            )
        base = parse_instant(str(step.get("finished_at") or started))
        retry_after_ms = ((error.get("details") or {}).get("retryAfterMs") or 0) if error else 0
        until = base + max(RETRY_BACKOFF, timedelta(milliseconds=float(retry_after_ms)))
        if self.now >= until:
            return None
        return Hold(
            "backoff",
            f"{step['status']} at {self.words(started)} ({code}); tries again after {self.words(until)}",
            f"croft logs {name} --failed shows why; croft run {name} runs it now",
            to_iso(until),
        )

    def input_changed_since(self, name: str, since: str) -> bool:
        at = _at(since)
        for source in self.inputs[name]:
            version = _at(data_version(self.g.catalog.get(source)))
            if version is not None and at is not None and version > at:
                return True
        return False

    def input_wait(self, info: AssetInfo) -> Hold | None:
        """A reader skipped because of an input waits while that input is held and has not changed."""
        name = info.name
        step = self.g.latest.get(name)
        if not step or step.get("status") != "skipped" or step.get("attempt") != 0:
            return None
        reason = str(step.get("reason") or "")
        named = reason.split(" ")[1] if reason.startswith("input ") and " " in reason[6:] else None
        blockers = [named] if named in self.inputs[name] else list(self.inputs[name])
        for source in blockers:
            held = self.hold(source)
            if held is None or held.kind == "paused":
                continue
            if self.input_changed_since(name, str(step["started_at"])):
                return None
            code = "" if held.kind == "backoff" else f"{held.code}, "
            return Hold(
                "backoff",
                f"waits for its input {source}: {code}{held.reason}",
                held.hint,
                held.until,
            )
        return None

    # -- all together ----------------------------------------------------------------------------------
    def decide(self) -> DueWork:
        g = self.g
        self.fires: dict[str, str] = {}
        self.ahead: dict[str, tuple[str | None, str]] = {}
        for name, info in self.assets.items():
            row = g.state.get(name) or {}
            last_fire = g.rollbacks[name] if name in g.rollbacks else row.get("last_fire_at")
            view = View(
                asset=name,
                kind=info.kind,
                schedule=info.schedule,
                cron=info.cron,
                next_fire_at=None,
                last_fire_at=last_fire,
                last_attempt_at=row.get("last_attempt_at"),
                schedule_problem=info.schedule_problem if info.kind == "ingest" else None,
            )
            self.views[name] = view
            if info.kind == "ingest":
                self.ingest(info, view)
            else:
                self.transform(info, view)
        considered = [n for n, i in self.assets.items() if i.kind != "ingest" or i.cron]
        for name in considered:
            self.views[name].hold = self.hold(name)
        primary = sorted(n for n in considered if self.views[n].primary)
        held = [(n, h) for n in primary if (h := self.views[n].hold) is not None]
        ready = [n for n in primary if self.views[n].hold is None]
        starts = [n for n in ready if self.assets[n].kind == "ingest"]
        for follower in sorted(self.downstream(set(starts))):
            view = self.views[follower]
            if view.primary or self.assets[follower].kind == "ingest":
                continue
            after = [s for s in starts if follower in self.downstream({s})]
            view.due = True
            view.reason = f"after {', '.join(after)}, which {'is' if len(after) == 1 else 'are'} due"
        fires = {n: f for n, f in self.fires.items() if n in ready}
        return DueWork(self.views, held, self.components(ready), fires, self.ahead)

    def components(self, names: Sequence[str]) -> list[list[str]]:
        """Partition ``names`` by connected components of the whole graph (shared inputs link too)."""
        parent = {n: n for n in self.assets}

        def find(n: str) -> str:
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        for name, ins in self.inputs.items():
            for source in ins:
                parent[find(source)] = find(name)
        groups: dict[str, list[str]] = {}
        for name in sorted(names):
            groups.setdefault(find(name), []).append(name)
        return sorted(groups.values())


def release_policy(info: AssetInfo, jitter_s: float | None, quiet: Sequence[str]) -> release.Policy:
    """An ingest's jitter and quiet hours: its own where it sets them, else the project's."""
    return release.Policy.resolve(info.jitter_s, info.quiet, jitter_s, quiet)


def next_look(given: DueInput) -> datetime | None:
    """The first instant after ``given.now`` at which the decision can change by the clock alone: an
    ingest's next release (its fire, jittered, out of quiet hours) or the end of an asset's pause. The
    idle memo (and through it the minute gate) sleeps until then: an instant missed here is a fire
    skipped, so this reads the same functions ``due_work`` decides with."""
    found = pause_ends(given.pauses, given.now)
    paused_until = given.setting.paused_until if given.setting.state == "paused" else None
    if paused_until and paused_until > to_iso(given.now):  # the project's own pause ends
        found.append(parse_instant(paused_until))
    for info in given.assets.values():
        if info.kind != "ingest" or not info.cron:
            continue
        spec = info.spec or cron.parse_cron(info.cron)
        policy = release_policy(info, given.jitter_s, given.quiet)
        _, pending = release.due_fire(info.name, spec, given.tz, given.now, policy)
        nxt = release.next_release(info.name, spec, given.tz, given.now, policy, pending)
        if nxt is not None:
            found.append(nxt)
    return min(found, default=None)


def due_work(given: DueInput) -> DueWork:
    """Views of every asset, the held due ones, the groups to start and the fires they handle."""
    return _Decider(given).decide()
