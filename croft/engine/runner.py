"""A run: plan the assets, take their leases, run each step with retries, and record every attempt.

Every attempt is a ``steps`` row written when it starts, so a crash leaves evidence. A step's rows, cursor
and bookkeeping commit together in the warehouse or not at all; the history rows around them say what
happened. Steps whose input failed are skipped with the reason. Retryable failures get more attempts
after ``CROFT_RETRY_DELAYS``; deterministic ones do not.
"""

from __future__ import annotations

import contextlib
import shlex
import time
import zlib
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from croft.core import clock, disk
from croft.core.clock import now, to_iso
from croft.core.identity import current
from croft.core.problems import CroftError, Problem, Stopped, problem
from croft.core.result import Next, Result
from croft.core.suggest import unknown_asset
from croft.engine import settings
from croft.engine.backfill import Book
from croft.engine.catalog import mirror
from croft.engine.context import StepLog
from croft.engine.reconcile import reconcile
from croft.engine.sandbox import output_routing
from croft.engine.staleness import stale_reasons
from croft.engine.steps import StepInput, execute, write_mode
from croft.engine.stopping import stop_signals
from croft.engine.warehouse import Warehouse
from croft.engine.window import refill_refusal
from croft.history import catalog, leases, runs, state, steplogs
from croft.history.db import open_history
from croft.history.prune import prune_after_run
from croft.history.runid import new_run_id
from croft.notify.policy import Policy
from croft.notify.runping import RunPings, tail_of
from croft.notify.send import after_run
from croft.project.asset import AssetFacts
from croft.project.config import Project
from croft.project.discovery import discover
from croft.project.fingerprint import code_hash
from croft.project.graph import Graph
from croft.project.rules import MAX_NAME_LENGTH

__all__ = ["RunOptions", "run_assets"]

MAX_RETRY_AFTER_S = 300.0


@dataclass
class RunOptions:
    selectors: list[str] = field(default_factory=list)
    only: bool = False
    trigger: str = "manual"
    human: bool = True
    argv: list[str] = field(default_factory=list)
    preview: bool = False
    # A scheduled run (``croft run --due``): the run id the tick noted, and a factory of the scheduler's
    # rules (croft.scheduler.tick.duerules.DueRules), called with (project, history connection, facts).
    run_id: str | None = None
    due_rules: Any = None
    wait: bool = False  # --wait: a run by hand waits for another run's leases as long as that run takes
    # --full-refresh / --from: what the one named ingest loads (engine.window.Refill), and what to call
    # after each committed chunk of a backfill (the command's progress line)
    refill: Any = None
    on_chunk: Any = None


class Interrupted(Exception):
    """Ctrl-C or SIGTERM reached the run."""


def _unknown(name: str, known: list[str], preview: bool = False) -> CroftError:
    return unknown_asset(name, known, "preview" if preview else "run")


@dataclass
class _Plan:
    requested: list[str]  # run whatever their state
    order: list[str]  # everything planned, in dependency order; the rest run only if stale at their turn
    cyclic: set[str]


def plan(facts: dict[str, AssetFacts], options: RunOptions) -> _Plan:
    graph = Graph({name: f.inputs for name, f in facts.items()})
    order, stuck = graph.order()
    if options.selectors:
        for name in options.selectors:
            if name not in facts:
                raise _unknown(name, sorted(facts), options.preview)
        requested = list(dict.fromkeys(options.selectors))
        candidates = set() if options.only else graph.downstream(requested)
    else:
        requested = [n for n, f in facts.items() if f.kind == "ingest" or _errors(f)]
        candidates = {n for n, f in facts.items() if f.kind != "ingest"}
    wanted = set(requested) | candidates
    return _Plan(requested, [n for n in order + stuck if n in wanted], set(stuck))


def _errors(facts: AssetFacts) -> list[Problem]:
    return [p for p in facts.problems if p.severity == "error"]


class _Run:
    def __init__(self, project: Project, options: RunOptions):

        self.project = project
        self.options = options
        # The knobs first: a bad one refuses the run before anything is opened or recorded.
        self.delays = settings.retry_delays()
        self.lease_wait = settings.lease_wait_seconds()
        self.redactor = project.redactor
        self.conn = open_history(project.config.state_dir)
        self.warehouse = Warehouse(project.config.database)
        self.facts, self.discovery_problems = discover(project)
        self.kinds = {name: f.kind for name, f in self.facts.items()}
        self.results: dict[str, dict[str, Any]] = {}
        self.problems: list[Problem] = []
        self.rules: Any = None  # the scheduler's rules in a scheduled run
        self.pings: Any = None  # a scheduled run's healthchecks-style pings (notify.runping)
        self.proposed: dict[str, str] = {}  # an agent's run: asset -> the code hash it built, not approved

    def close(self) -> None:
        self.warehouse.close()
        self.conn.close()

    # -- leases -------------------------------------------------------------------------------------
    def _take_leases(self, run_id: str, assets: list[str]) -> list[Any]:
        deadline = None if self.options.wait else time.monotonic() + self.lease_wait
        who = current()
        while True:
            held = leases.acquire(self.conn, assets, run_id, who)
            if not held or (deadline is not None and time.monotonic() >= deadline):
                order = {name: i for i, name in enumerate(assets)}  # as the person asked, not by name
                return sorted(held, key=lambda h: order.get(h.asset, len(order)))
            time.sleep(0.2)

    # -- one asset ----------------------------------------------------------------------------------
    def _input_blocker(self, name: str) -> str | None:
        for source in self.facts[name].inputs:
            before = self.results.get(source)
            if before and before["status"] in ("failed", "interrupted", "crashed"):
                return f"input {source} failed ({self.run_id})"
            if before and before["status"] == "skipped" and before.get("skippedBecause"):
                return f"input {source} was skipped: {before['skippedBecause']}"
        return None

    def _stale(self, name: str) -> list[str]:
        facts = self.facts[name]
        entries = catalog.all_entries(self.conn)
        reasons = stale_reasons(
            facts.kind,
            entries.get(name),
            self._hash(facts),
            {i: entries.get(i) for i in facts.inputs if i in self.facts},
        )
        texts = [r.text() for r in reasons]
        if facts.kind != "ingest" and name in entries and not self.warehouse.has_table(name):
            texts.append("its table is gone from the warehouse")  # dropped outside croft: built again
        return texts

    def _hash(self, facts: AssetFacts) -> str | None:
        try:
            return code_hash(self.project, facts)
        except CroftError:
            return None

    def _skip(self, name: str, because: str) -> None:
        runs.record_skipped_step(self.conn, run_id=self.run_id, asset=name, reason=because, error=None)
        self.results[name] = {
            "asset": name,
            "status": "skipped",
            "reason": because,
            "skippedBecause": because,
            "attempt": 0,
        }

    def _step(self, name: str, reason: str) -> None:
        """Run one asset, attempt after attempt while its failures are retryable; record each attempt."""
        facts = self.facts[name]
        delays = self.delays
        max_attempts = 1 + (0 if _errors(facts) or self.options.preview else max(0, facts.retries))
        if self.pings is not None:
            self.pings.step_started(name)
        for attempt in range(1, max_attempts + 1):
            outcome, wait = self._attempt(facts, reason, attempt, max_attempts, delays)
            if wait is None:
                self.results[name] = outcome
                if self.pings is not None:
                    ok = outcome.get("status") in ("ok", "unchanged")
                    self.pings.step_ended(name, ok, "" if ok else self._ping_body([outcome]))
                return
            clock.pause(wait)

    def _run_pings(self) -> Any:
        """A scheduled run's pings (``notify.runPing``, each asset's ``run_ping``); none by hand."""
        if self.options.trigger != "schedule" or self.options.preview:
            return None

        pings = RunPings(self.project, Policy(self.project, self.facts), self.run_id)
        pings.run_started()
        return pings

    def _ping_body(self, steps: list[dict[str, Any]]) -> str:
        """A failure ping's body: each failed step's error, then the redacted tail of its log."""

        failed = [s for s in steps if s.get("status") in ("failed", "crashed", "interrupted")]
        lines = [f"croft: {self.project.root.name}: run {self.run_id}"]
        for step in failed:
            error = step.get("error") or {}
            lines.append(
                f"{step['asset']} {step['status']}: {error.get('code', '')}: {error.get('message', '')}"
            )
        lines += [f"{p.code}: {p.message}" for p in self.problems if not p.asset]
        logs = []
        for step in failed:
            attempt = int(step.get("attempt") or 1)
            name = _log_name(self.run_id, step["asset"], attempt)
            path = str(self.project.config.state_dir / "logs" / name)
            with contextlib.suppress(Exception):  # a log that cannot be read leaves the body its errors
                text = steplogs.text(self.conn, self.run_id, step["asset"], attempt, path)
                if text:
                    logs.append((name, text))
        return self.redactor.text("\n".join(lines) + "\n\n" + tail_of(logs, self.redactor.text))

    def _attempt(
        self, facts: AssetFacts, reason: str, attempt: int, max_attempts: int, delays: tuple[float, ...]
    ) -> tuple[dict[str, Any], float | None]:
        """One attempt: (its outcome, how long to wait before the next one, or None for no next one)."""
        name = facts.name
        digest = self._hash(facts)
        # one file per attempt while it runs (a crash leaves it), so a failed attempt's log holds its own
        # lines only; a row of the history once it ended (``history.steplogs``)
        log_path = self.project.config.state_dir / "logs" / _log_name(self.run_id, name, attempt)
        where: dict[str, Any] = {"run_id": self.run_id, "asset": name, "attempt": attempt}
        if self.rules is not None:
            self.rules.attempt_started(name, self.run_id)
        runs.start_step(self.conn, **where, reason=reason, code_hash=digest, log_path=str(log_path))
        outcome: dict[str, Any] = {
            "asset": name,
            "reason": reason,
            "attempt": attempt,
            "maxAttempts": max_attempts,
            "logsCommand": f"croft logs {name}",
        }
        started = time.monotonic()
        try:
            log = StepLog(log_path, self.redactor)
        except OSError as exc:  # no log can be written: this step fails, with its cause, and the run goes on
            failure = _unloggable(exc, name, log_path)
            runs.finish_step(self.conn, **where, status="failed", error=failure)
            outcome.update(status="failed", error=failure.to_dict(), durationMs=_ms_since(started))
            self.problems.append(failure.with_(details={**(failure.details or {}), "runId": self.run_id}))
            return outcome, None
        try:
            errors = _errors(facts)
            if errors:
                raise CroftError(errors[0])
            step = StepInput(
                self.project, facts, self.run_id, attempt, digest, log, self.warehouse, self.options.preview
            )
            refill = self._refill_for(name)
            if refill is not None:
                step.refill = refill
                step.on_chunk = self.options.on_chunk
                if refill.window is not None:
                    step.book = Book(self.conn, name, refill, self.run_id)
            done = _execute_or_internal_error(step)
            log(
                f"wrote: +{done['added']} ~{done['updated']} -{done['deleted']} ={done['unchanged']}"
                + (" (preview: rolled back)" if self.options.preview else "")
            )
        except KeyboardInterrupt:
            stop = problem(
                "INTERRUPTED",
                f"the run was interrupted while {name} was running",
                f"Nothing of {name}'s attempt was committed; run it again with `croft run {name}`.",
                asset=name,
            )
            log("interrupted")
            runs.finish_step(self.conn, **where, status="interrupted", error=stop)
            self.results[name] = {**outcome, "status": "interrupted", "error": stop.to_dict()}
            self.problems.append(stop)
            raise Interrupted from None
        except CroftError as exc:
            failure = Problem.from_dict(self.redactor.obj(exc.problem.with_(asset=name).to_dict()))
            retry = failure.retryable and attempt < max_attempts
            wait = _retry_wait(attempt, failure, delays) if retry else None
            log(f"failed: {failure.code}: {failure.message}")
            stored = failure
            if wait is not None:
                log(f"retrying in {wait:g} s (attempt {attempt + 1} of {max_attempts})")
                retry_at = to_iso(now() + timedelta(seconds=wait))  # status says "retrying at" until then
                stored = failure.with_(details={**(failure.details or {}), "retryAt": retry_at})
            runs.finish_step(self.conn, **where, status="failed", error=stored)
            outcome.update(status="failed", error=failure.to_dict(), durationMs=_ms_since(started))
            if wait is None:
                self.problems.append(failure.with_(details={**(failure.details or {}), "runId": self.run_id}))
            return outcome, wait
        finally:
            log.close()
            steplogs.keep(self.conn, self.run_id, name, attempt, log_path)  # the file becomes a row
        return self._succeeded(facts, done, outcome, digest, started), None

    def _succeeded(
        self,
        facts: AssetFacts,
        done: dict[str, Any],
        outcome: dict[str, Any],
        digest: str | None,
        started: float,
    ) -> dict[str, Any]:
        name = facts.name
        status = "ok" if done["changed"] or self.options.preview else "unchanged"
        rows = {"in": done["rowsIn"], **{k: done[k] for k in ("added", "updated", "unchanged", "deleted")}}
        runs.finish_step(
            self.conn,
            run_id=self.run_id,
            asset=name,
            attempt=outcome["attempt"],
            status=status,
            rows_in=rows["in"],
            **{k: rows[k] for k in ("added", "updated", "unchanged", "deleted")},
        )
        if not self.options.preview:
            mirror(self.conn, self.warehouse, {name: facts.kind})
        if self.options.human and digest:
            state.put_schedule_state(self.conn, name, approved_code_hash=digest)
        elif digest and self.options.trigger == runs.AGENT:
            self.proposed[name] = digest
        outcome.update(status=status, durationMs=_ms_since(started), rows=rows)
        if done.get("cursorAfter") is not None or done.get("since") is not None:
            outcome["cursor"] = {
                "before": done["cursorBefore"],
                "after": done["cursorAfter"],
                "sinceUsed": done.get("since"),
            }
        if "requests" in done:
            outcome["requests"] = done["requests"]
        if "chunks" in done:
            outcome["backfill"] = {"window": done["window"], **done["chunks"]}
        refill = self._refill_for(name)
        if refill is not None and refill.full_refresh:
            outcome["fullRefresh"] = {"rowsReplaced": done["deleted"], "rows": done["added"]}
        if self.options.preview and done.get("rows") is not None:
            outcome["sample"] = self.redactor.obj(done["rows"][:10])
        return outcome

    # -- the whole run ------------------------------------------------------------------------------
    def go(self) -> Result:
        """The run with Ctrl-C / SIGTERM handled from before its first wait (see engine.stopping)."""
        try:
            with stop_signals(_stop_at_once), output_routing():
                return self._go()
        except Stopped as stop:
            raise self._stopped(stop.problem) from None

    def _stopped(self, stop: Problem) -> Stopped:
        """After a second signal unwound the run: record it interrupted in one short transaction."""
        run_id = getattr(self, "run_id", None)
        stop = stop.with_(details={"runId": run_id}) if run_id else stop
        data = {"runId": run_id, "status": "interrupted", "steps": list(self.results.values())}
        if run_id:
            with contextlib.suppress(Exception):
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                runs.interrupt_run(self.conn, run_id, stop, {"ok": False, "data": data, "exit": 130})
        return Stopped(stop, self.redactor.obj(data))

    def _go(self) -> Result:
        reconcile(
            self.conn,
            lambda assets: mirror(
                self.conn, self.warehouse, {a: self.kinds[a] for a in assets if a in self.kinds}
            ),
        )
        self.problems.extend(p for p in self.discovery_problems if p.severity == "error")
        self.rules = (
            self.options.due_rules(self.project, self.conn, self.facts) if self.options.due_rules else None
        )
        the_plan = plan(self.facts, self.options) if self.rules is None else self._due_plan()
        self._check_refill()
        self.run_id = self.options.run_id or new_run_id(now(), self.project.config.timezone, self.conn)
        runs.create_run(
            self.conn,
            run_id=self.run_id,
            trigger=self.options.trigger,
            human=self.options.human,
            argv=self.redactor.obj(self.options.argv),
            who=current(),
        )
        self.pings = self._run_pings()
        if self.rules is not None:
            the_plan.order = self._due_leases(the_plan)
        try:
            held = self._take_leases(self.run_id, the_plan.order)
        except KeyboardInterrupt:
            self._recorded(lambda: leases.release(self.conn, self.run_id))
            return self._interrupted("while it waited for another run's lease")
        if held:
            return self._busy(held)
        status = "succeeded"
        try:
            for name in the_plan.order:
                self._one(name, the_plan)
        except (Interrupted, KeyboardInterrupt):
            status = "interrupted"
            if not any(p.code == "INTERRUPTED" for p in self.problems):  # e.g. in the pause before a retry
                self.problems.append(_interrupted_problem("between steps or before a retry"))
        finally:
            self._recorded(lambda: leases.release(self.conn, self.run_id))
        failed = any(r["status"] == "failed" for r in self.results.values())
        invalid = any(p.severity == "error" for p in self.discovery_problems)  # e.g. two files, one name
        if status != "interrupted" and (failed or invalid):
            status = "failed"
        return self._finish(status)

    def _one(self, name: str, the_plan: _Plan) -> None:
        if name in the_plan.cyclic:
            self.facts[name] = _with_problem(
                self.facts[name],
                problem(
                    "CYCLE",
                    f"{name} is on or after a cycle of inputs",
                    "Remove one of the reads that closes the loop.",
                    asset=name,
                ),
            )
            self._step(name, "requested")
            return
        blocker = self._input_blocker(name)
        if blocker:
            self._skip(name, blocker)
            return
        if self.rules is not None and self._due_held(name):
            return
        facts = self.facts[name]
        if facts.kind != "ingest":
            entries = catalog.all_entries(self.conn)
            unbuilt = [i for i in facts.inputs if i in self.facts and i not in entries]
            if unbuilt and not self.options.preview:
                self._skip(name, f"input {unbuilt[0]} has never been built")
                return
        if name in the_plan.requested:
            refill = self._refill_for(name)
            reason = "requested"
            if refill is not None:
                reason = "full refresh" if refill.full_refresh else f"backfill {refill.window}"
            self._step(name, reason)
            return
        reasons = self._stale(name)
        if not reasons:
            self.results[name] = {"asset": name, "status": "skipped", "reason": "up to date", "attempt": 0}
            return
        self._step(name, "; ".join(reasons))

    def _check_refill(self) -> None:
        """A full refresh or a backfill names one ingest that can have it; refused before anything is
        recorded, and never from a scheduled run (a person decides when a table is loaded again)."""
        refill = self.options.refill
        if refill is None:
            return

        flag = "--full-refresh" if refill.full_refresh else "--from"
        if self.options.trigger == "schedule" or self.rules is not None:
            raise CroftError(
                "USAGE",
                f"{flag} is refused from a scheduled run: a person decides when a table is loaded again",
                f"Run it by hand: croft run ASSET {flag} ...",
            )
        if len(self.options.selectors) != 1:
            raise CroftError(
                "USAGE",
                f"{flag} takes exactly one asset, the ingest to load again",
                f"croft run ASSET {flag} ... (the transforms that read it rebuild in the same run)",
            )
        name = self.options.selectors[0]
        facts = self.facts[name]
        incremental = facts.incremental or {}
        saved = (self.warehouse.state(name) or {}) if facts.kind == "ingest" else {}
        refusal = refill_refusal(
            name,
            facts.kind,
            tuple(facts.key),
            incremental.get("field"),
            write_mode(facts),
            refill,
            (saved.get("cursor_type"), incremental.get("unit") or saved.get("cursor_unit")),
        )
        if refusal is not None:
            raise refusal

    def _refill_for(self, name: str) -> Any:
        refill = self.options.refill
        return refill if refill is not None and self.options.selectors == [name] else None

    def _interrupted(self, when: str) -> Result:
        self.problems.append(_interrupted_problem(when))
        return self._finish("interrupted")

    # -- a scheduled run (croft run --due): the scheduler's rules, from croft.scheduler.tick.duerules ------------
    def _due_plan(self) -> _Plan:
        known = self.rules.selectors(self.options.selectors, self.options.run_id)
        the_plan = plan(self.facts, RunOptions(selectors=known))
        the_plan.requested = self.rules.requested(the_plan.requested)
        return the_plan

    def _due_leases(self, the_plan: _Plan) -> list[str]:
        """Holds at plan time, then the leases without waiting: a lease met holds that asset only."""
        order = self.rules.plan_holds(the_plan.order, self.run_id)
        while order:
            taken = leases.acquire(self.conn, order, self.run_id, current())
            if not taken:
                break
            busy = self.rules.lease_conflict(taken)
            order = [n for n in order if n not in busy]
        for name in self.rules.held:
            self._held(name)
        return order

    def _due_held(self, name: str) -> bool:
        why = self.rules.step_hold(name)
        if why:
            self.rules.held[name] = why
            self._held(name)
        return bool(why)

    def _held(self, name: str) -> None:
        """Held: no step row, no attempt, its fire stays due; readers see it skipped."""
        why = self.rules.held[name]
        self.results[name] = {
            "asset": name,
            "status": "skipped",
            "reason": why,
            "skippedBecause": why,
            "attempt": 0,
        }

    def _busy(self, held: list[Any]) -> Result:
        """Another run writes what this one needs: say which asset and which run, offer to wait, and
        record the run as "busy" (it started nothing), not as a failure."""
        first = held[0]
        names = list(dict.fromkeys(h.asset for h in held))
        holder = runs.get_run(self.conn, first.run_id) or {}
        kind = "scheduled run" if holder.get("trigger") == "schedule" else "run"
        also = f" (and {', '.join(names[1:])})" if len(names) > 1 else ""
        again = shlex.join(
            ["croft", "run", *self.options.selectors, *(["--only"] if self.options.only else [])]
        )
        busy = problem(
            "ASSET_BUSY",
            f"{first.asset}{also} is being written by {kind} {first.run_id} (pid {first.who.pid},"
            f" since {first.since}); nothing was run",
            f"`{again} --wait` waits for that run to finish, then runs; `croft logs {first.run_id}` shows it.",
            asset=first.asset,
            fix={
                "kind": "command",
                "command": f"{again} --wait",
                "description": "wait for that run, then run",
            },
            details={
                "holders": [
                    {"asset": h.asset, "runId": h.run_id, "pid": h.who.pid, "since": h.since} for h in held
                ]
            },
        )
        self.problems.append(busy)
        return self._finish("busy")

    def _finish(self, status: str) -> Result:
        steps = [self.results[name] for name in self.results]
        data: dict[str, Any] = {"runId": self.run_id, "status": status, "steps": steps}
        if self.options.preview:
            data["preview"] = True
        data["startedBy"] = runs.started_by(self.options.trigger)
        nexts = [
            Next(f"croft logs {s['asset']} --failed", "see why it failed")
            for s in steps
            if s["status"] == "failed"
        ]
        if self.proposed:
            data["awaitingPerson"] = self._awaiting_person(nexts)
        ok = status == "succeeded" and not any(p.severity == "error" for p in self.problems)  # e.g. DISK_FULL
        result = Result(data=self.redactor.obj(data), problems=self.problems, next=nexts, ok=ok)
        if status == "interrupted":
            result.exit = 130
        summary = {**result.envelope(), "exit": result.exit_code}
        ended = [True]
        if self._recorded(
            lambda: ended.__setitem__(
                0, runs.finish_run(self.conn, self.run_id, status, self.redactor.obj(summary))
            )
        ):
            result.ok = False
        if self.pings is not None:
            self.pings.run_ended(ok, "" if ok else self._ping_body(steps))
        if not ended[0] and self.rules is not None:
            # The scheduler already ended this run (past its ceiling: scheduler.tick.ceiling), recorded it
            # TIMEOUT and notified; saying "interrupted" now would be a second, wrong message.
            return result
        after_run(self.project, self.conn, self.options, self.redactor.obj(summary), self.facts)
        return result

    def _awaiting_person(self, nexts: list[Next]) -> list[str]:
        """An agent's run built these assets, but their code is not the code a person last ran: each stays
        held from the scheduler, and the answer names what the person does to release it."""
        waiting = []
        for name, digest in self.proposed.items():
            approved = (state.get_schedule_state(self.conn, name) or {}).get("approved_code_hash")
            if approved == digest:
                continue  # a person already ran this very code
            waiting.append(name)
            self.problems.append(
                problem(
                    "SCHEDULE_HELD",
                    f"{name} was built by an agent, so the scheduler still holds it: only a person's run"
                    " approves code",
                    f"Ask the user to run `croft run {name}` in a terminal (or press Run now on `croft ui`'s"
                    " page) after checking the change; that releases it.",
                    severity="info",
                    asset=name,
                )
            )
            nexts.append(
                Next(
                    f"croft run {name}",
                    f"for the person: releases {name} to the scheduler (or Run now on the page)",
                )
            )
        return waiting

    def _recorded(self, write: Any) -> bool:
        """Do one bookkeeping write; if it fails (a full disk), keep its problem beside the run's own report
        instead of losing the run id and steps to it. True when it failed; reconcile settles the run later."""
        try:
            write()
            return False
        except CroftError as exc:
            self.problems.append(
                exc.problem.with_(details={**(exc.problem.details or {}), "runId": self.run_id})
            )
            return True


def _unloggable(exc: OSError, asset: str, path: Any) -> Problem:
    """The problem of a step whose log file cannot be opened: a file where ``logs/`` should be
    (STATE_DIR_INVALID), a full or read-only disk; anything else is named with the path."""

    found = disk.os_problem(exc, f"opening the log of {asset}", str(path))
    if found is not None:
        return found.with_(asset=asset)
    return problem(
        "PATH_UNWRITABLE",
        f"opening the log of {asset}: croft cannot write {path} ({exc.strerror or exc})",
        "Check that the state folder and its logs/ are folders this user can write; croft.json's stateDir"
        " chooses where they are.",
        asset=asset,
        details={"file": str(path), "cause": exc.strerror or str(exc)},
    )


def _log_name(run_id: str, asset: str, attempt: int) -> str:
    """``r_….items.log`` for the first attempt (as before), ``r_….items.attempt2.log`` for a retry. A name
    past the name rule's bound (one validate refuses, but a run must not crash on) is cut and given a
    digest, so the file name stays a file name."""
    if len(asset) > MAX_NAME_LENGTH:
        asset = f"{asset[:MAX_NAME_LENGTH]}-{zlib.crc32(asset.encode()):08x}"
    return f"{run_id}.{asset}.log" if attempt == 1 else f"{run_id}.{asset}.attempt{attempt}.log"


def _stop_at_once() -> None:
    """The second Ctrl-C / SIGTERM: unwind the run past its clean-up (``go`` records it interrupted)."""
    raise Stopped(
        problem(
            "INTERRUPTED",
            "the run was interrupted twice and stopped at once",
            "Nothing half-written was kept; run it again when you are ready.",
        ),
        {},
    )


def _os_error(exc: OSError, asset: str) -> CroftError:
    """An OS error while a step wrote (its log, the warehouse): DISK_FULL or PATH_UNWRITABLE naming the
    path (``core.disk``), or the OS's own words."""

    machine = disk.os_problem(exc, f"writing {asset}")
    if machine is not None:
        return CroftError(machine.with_(asset=asset))
    return CroftError(
        "INTERNAL_ERROR",
        f"the OS refused a write while {asset} ran: {exc.strerror or exc} ({exc.filename or 'no file named'})",
        "Check that the project's folders are writable and the disk is healthy, then run again.",
        asset=asset,
        details={"errno": exc.errno, "file": exc.filename, "exception": type(exc).__name__},
    )


def _interrupted_problem(when: str) -> Problem:
    return problem(
        "INTERRUPTED",
        f"the run was interrupted {when}",
        "Nothing half-written was kept; run it again when you are ready.",
    )


def _execute_or_internal_error(step: StepInput) -> dict[str, Any]:
    """A bug in croft fails the step with INTERNAL_ERROR, so the history row says so instead of 'running'."""
    try:
        return execute(step)
    except (CroftError, KeyboardInterrupt):
        raise
    except OSError as exc:
        raise _os_error(exc, step.facts.name) from exc
    except Exception as exc:
        raise CroftError(
            "INTERNAL_ERROR",
            f"croft failed while running {step.facts.name}: {type(exc).__name__}: {exc}",
            "This is a bug in croft, not in the asset: please report it with `croft logs "
            + step.facts.name
            + "`.",
            asset=step.facts.name,
            details={"exception": type(exc).__name__},
        ) from exc


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _retry_wait(attempt: int, failure: Problem, delays: tuple[float, ...]) -> float:
    """The configured delay for this attempt, or the server's longer Retry-After (up to 5 minutes)."""
    wait = delays[min(attempt - 1, len(delays) - 1)]
    retry_after = ((failure.details or {}).get("retryAfterMs") or 0) / 1000
    return max(wait, min(retry_after, MAX_RETRY_AFTER_S))


def _with_problem(facts: AssetFacts, extra: Problem) -> AssetFacts:
    return replace(facts, problems=(*facts.problems, extra))


def run_assets(project: Project, options: RunOptions) -> Result:
    run = _Run(project, options)
    try:
        result = run.go()
        prune_after_run(run.conn, project.config)  # bounded history: old runs go as new ones come
        return result
    finally:
        run.close()
