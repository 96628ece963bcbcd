"""Telling someone when the scheduler fails, and only then: the entry points the runner and the tick call.

- ``after_run``: the runner's one call at the end of every run. A scheduled run with failed, crashed or
  interrupted steps notifies by the streak rule; any run in which an asset with a failing streak
  succeeds sends one "recovered". Costs one settings read when there is nothing to say.
- ``notify_failed_start``: the tick's call for a run it started that never recorded itself.
- ``notify_crashed_runs``: the tick's call for the scheduled runs reconcile has just marked crashed.
- ``ping_after_tick``: the tick's call after each completed project tick (the dead-man's switch).

None of them raises: every notification that does not go out is one redacted line in
``<state>/logs/notify.log``, and so is every message delivered (``sent desktop (notify-send): failed``). The webhook's code (and httpx) loads only when one is posted: the
minute of ``croft tick --all`` imports this module, and most minutes post nothing.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from croft import __version__
from croft.core.clock import now
from croft.history import runs
from croft.history.db import open_history
from croft.notify import streaks
from croft.notify.channels import send_one
from croft.notify.desktop import show
from croft.notify.log import host_of, is_dry, log_miss, log_sent, record
from croft.notify.message import (
    Failed,
    failure_message,
    failure_payload,
    recovered_message,
    recovered_payload,
    scheduler_message,
    scheduler_payload,
)
from croft.notify.ping import ping_logged
from croft.notify.policy import Policy

if TYPE_CHECKING:
    import sqlite3

    from croft.core.problems import Problem
    from croft.project.asset import AssetFacts
    from croft.project.config import Project

__all__ = [
    "after_run",
    "note_miss",
    "note_sent",
    "notify_crashed_runs",
    "notify_event",
    "notify_failed_start",
    "notify_scheduled_failure",
    "notify_scheduler_problem",
    "ping_after_tick",
]

FAILED_STATUSES = ("failed", "crashed", "interrupted")
SUCCEEDED = ("ok", "unchanged")


def after_run(
    project: Project,
    conn: sqlite3.Connection,
    options: Any,
    summary: dict[str, Any],
    facts: Mapping[str, AssetFacts] | None = None,
) -> None:
    """Decide what a finished run says, from its stored (redacted) summary; never raises. ``facts`` (the
    runner's) give each asset's own notify_after / notify_remind (``notify.policy``)."""
    run_id = str((summary.get("data") or {}).get("runId") or "")
    try:
        steps = (summary.get("data") or {}).get("steps") or []
        if getattr(options, "preview", False):
            return
        if getattr(options, "trigger", "manual") == "schedule":
            failed = [Failed(s["asset"], s.get("error")) for s in steps if s.get("status") in FAILED_STATUSES]
            if failed:
                _failed(project, conn, run_id, failed, summary, Policy(project, facts))
        succeeded = [s["asset"] for s in steps if s.get("status") in SUCCEEDED]
        if succeeded:
            _recovered(project, conn, run_id, succeeded, summary)
    except (Exception, KeyboardInterrupt) as exc:
        note_miss(project, run_id, f"notify: {type(exc).__name__}: {exc}")


def notify_failed_start(
    project: Project,
    run_id: str,
    assets: Sequence[str],
    problem: Problem | dict[str, Any] | None,
    conn: sqlite3.Connection | None = None,
) -> None:
    """A run the tick started never recorded itself: notify its assets (by the streak rule); never raises.

    ``problem`` says why (the child's refusal, or a RUN_CRASHED the tick made); ``conn`` is the tick's
    open runs.sqlite, if it has one.
    """
    try:
        error = problem.to_dict() if problem is not None and not isinstance(problem, dict) else problem
        failed = [Failed(asset, error) for asset in assets]
    except (Exception, KeyboardInterrupt) as exc:
        note_miss(project, run_id, f"notify: {type(exc).__name__}: {exc}")
        return
    notify_scheduled_failure(project, run_id, failed, conn=conn)


def notify_scheduled_failure(
    project: Project,
    run_id: str,
    failed: Sequence[Failed],
    summary: dict[str, Any] | None = None,
    conn: sqlite3.Connection | None = None,
) -> None:
    """Notify a scheduled failure found outside the run (a failed start, a crash found later); never raises."""
    try:
        if conn is not None:
            _failed(project, conn, run_id, list(failed), summary)
            return

        own = open_history(project.config.state_dir)
        try:
            _failed(project, own, run_id, list(failed), summary)
        finally:
            own.close()
    except (Exception, KeyboardInterrupt) as exc:
        note_miss(project, run_id, f"notify: {type(exc).__name__}: {exc}")


def notify_crashed_runs(
    project: Project,
    conn: sqlite3.Connection,
    run_ids: Sequence[str],
    unstarted: Mapping[str, Sequence[Failed]] | None = None,
) -> None:
    """Notify the scheduled runs among those reconcile just marked crashed (its return value); never raises.

    The failed assets are the last attempts that ended crashed, failed or interrupted, plus, for a run the
    tick also found to be a failed start, the assets it never started (``unstarted``, by run id), so such
    a run gives one message naming both. Runs by hand are left alone.
    """
    for run_id in run_ids:
        try:
            run = runs.get_run(conn, run_id)
            if run is None or run.get("trigger") != "schedule":
                continue
            last: dict[str, dict[str, Any]] = {}
            for step in reversed(runs.list_steps(conn, run_id=run_id, limit=10_000)):  # oldest first
                last[step["asset"]] = step
            failing = {a: s for a, s in last.items() if s["status"] in FAILED_STATUSES}
            failed = [Failed(a, s.get("error")) for a, s in failing.items() if not _since_ok(conn, a, s)]
            failed += [f for f in (unstarted or {}).get(run_id, ()) if f.asset not in failing]
            if failing and not failed:
                continue  # found late (another command reconciled it) and every asset has succeeded since
            summary = run.get("summary") if isinstance(run.get("summary"), dict) else None
            _failed(project, conn, run_id, failed, summary)
        except (Exception, KeyboardInterrupt) as exc:
            note_miss(project, run_id, f"notify: {type(exc).__name__}: {exc}")


def _since_ok(conn: sqlite3.Connection, asset: str, step: dict[str, Any]) -> bool:
    """``asset`` succeeded in an attempt that started after ``step`` (a crash that is no longer news)."""
    row = conn.execute(
        "SELECT 1 FROM steps WHERE asset = ? AND status IN ('ok', 'unchanged') AND started_at > ? LIMIT 1",
        (asset, step.get("started_at") or ""),
    ).fetchone()
    return row is not None


def notify_scheduler_problem(project: Project, problem: Problem) -> None:
    """The scheduler cannot tick ``project`` (``scheduler.incidents`` decided this incident is news):
    desktop and webhook, as for a failed scheduled run; never raises."""
    try:
        error = problem.to_dict()
        title, body = scheduler_message(project.root.name, error, project.redactor.text)
        payload = scheduler_payload(project.root.name, title, body, error)
        _deliver(project, None, "scheduler", title, body, payload)
    except (Exception, KeyboardInterrupt) as exc:
        note_miss(project, None, f"notify: {type(exc).__name__}: {exc}")


def notify_event(
    project: Project,
    event: str,
    title: str,
    body: str,
    payload: dict[str, Any],
    run_id: str | None = None,
) -> None:
    """A message outside the streak rule (a freshness breach, fresh again, a slow run, a test), of
    ``run_id`` when it is about one: every channel, as for a failure; never raises."""
    try:
        _deliver(project, run_id, event, title, body, payload)
    except (Exception, KeyboardInterrupt) as exc:
        note_miss(project, run_id, f"notify: {type(exc).__name__}: {exc}")


def ping_after_tick(project: Project) -> None:
    """GET ``notify.ping`` after a completed project tick, a few seconds at most; a miss is logged."""
    url = project.config.notify_ping
    if not url:
        return

    ping_logged(url, project.config.state_dir, lambda: project.redactor.text)


# -- the two kinds of message -----------------------------------------------------------------------


def _failed(
    project: Project,
    conn: sqlite3.Connection,
    run_id: str,
    failed: list[Failed],
    summary: dict[str, Any] | None,
    policy: Policy | None = None,
) -> None:

    at = now()
    policy = policy or Policy(project)

    def rule(asset: str) -> tuple[int, float | None]:
        return policy.after(asset), policy.remind(asset)

    def change(old: streaks.Streaks) -> tuple[streaks.Streaks, tuple[list[str], int, bool]]:
        new, told, longest = streaks.on_failures(old, [f.asset for f in failed], at, rule)
        again = any((old.get(a) or {}).get("notifiedAt") for a in told)
        return new, (told, longest, again)

    try:
        fresh, longest, again = streaks.update(conn, change)
    except Exception as exc:  # no memory of the streak: better one message too many than none
        note_miss(project, run_id, f"streaks: not saved: {type(exc).__name__}: {exc}")
        fresh, longest, again = [f.asset for f in failed], 1, False
    if failed and not fresh:
        return
    chosen = [f for f in failed if f.asset in fresh]
    name = project.root.name
    redact = project.redactor.text
    title, body = failure_message(name, run_id, chosen, redact, streak=longest, reminder=again)
    payload = failure_payload(
        name, title, body, run_id=run_id, failed=chosen, streak=longest or 1, summary=summary
    )
    _deliver(project, run_id, "failed", title, body, payload)


def _recovered(
    project: Project, conn: sqlite3.Connection, run_id: str, succeeded: list[str], summary: dict[str, Any]
) -> None:

    going = streaks.read(conn)  # the usual case ends here, after one SELECT
    if not any(asset in going for asset in succeeded):
        return

    ended = streaks.update(conn, lambda old: streaks.on_successes(old, succeeded))
    if not ended:
        return
    name = project.root.name
    title, body = recovered_message(name, ended)
    longest = max(count for _, count in ended)
    payload = recovered_payload(name, title, body, run_id=run_id, streak=longest, summary=summary)
    _deliver(project, run_id, "recovered", title, body, payload)


# -- sending -------------------------------------------------------------------------------------------


def _deliver(
    project: Project, run_id: str | None, event: str, title: str, body: str, payload: dict[str, Any]
) -> None:
    """Desktop, then webhook; each one's miss is logged and does not stop the other."""

    config = project.config
    redact = project.redactor.text
    title, body = redact(title), redact(body)
    if config.notify_desktop:
        try:
            deliver_desktop(project, run_id, event, title, body)
        except Exception as exc:
            note_miss(project, run_id, f"desktop: {type(exc).__name__}: {exc}")
    if config.notify_webhook:
        try:
            deliver_webhook(project, run_id, event, config.notify_webhook, payload)
        except Exception as exc:
            note_miss(
                project, run_id, f"webhook {host_of(config.notify_webhook)}: {type(exc).__name__}: {exc}"
            )
    for configured in config.notify_urls:
        deliver_channel(project, run_id, event, configured, title, body)


# -- one channel each: ``_deliver`` and ``croft notify test`` (``notify.probe``) send through these ------


def deliver_channel(
    project: Project, run_id: str | None, event: str, configured: str, title: str, body: str
) -> str:
    """One ``notify.urls`` entry through Apprise (imported here, only when something is sent): the
    outcome in a few words ("sent", or why not); a miss is logged, naming the channel by its scheme only."""

    outcome = send_one(project, configured, title, body)
    if is_dry():
        record(
            project.config.state_dir,
            {
                "runId": run_id,
                "kind": "apprise",
                "event": event,
                "via": outcome.via,
                "status": outcome.status,
            },
        )
    if outcome.error:
        note_miss(project, run_id, f"apprise {outcome.via}: {outcome.error}")
    return outcome.error or "sent"


def deliver_desktop(project: Project, run_id: str | None, event: str, title: str, body: str) -> str | None:
    """The desktop notification (recorded instead in dry mode); why it was not shown, or None."""

    state = project.config.state_dir
    via = {"darwin": "osascript", "linux": "notify-send"}.get(sys.platform)
    if is_dry():
        entry = {"runId": run_id, "kind": "desktop", "event": event, "title": title, "body": body}
        record(state, {**entry, "via": via, "status": "dry"})
        return None
    outcome = show(title, body)
    if outcome.error:
        note_miss(project, run_id, outcome.error)
    else:
        note_sent(project, run_id, f"desktop ({outcome.via})", event)
    return outcome.error


def deliver_webhook(
    project: Project, run_id: str | None, event: str, url: str, payload: dict[str, Any]
) -> str | None:
    """The signed webhook POST; why it was not delivered, or None."""
    from croft.notify.webhook import post, sign  # httpx loads in a process that posts, not in every minute

    host = host_of(url)
    secret, refusal = _signing_secret(project)
    if refusal:
        note_miss(project, run_id, f"webhook {host}: {refusal}")
        return refusal
    body = json.dumps(project.redactor.obj(payload), ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json", "User-Agent": f"croft/{__version__}"}
    if secret:
        headers["X-Croft-Signature"] = sign(secret, body)
    delivery = post(url, body, headers)
    if is_dry():
        entry = {"runId": run_id, "kind": "webhook", "event": event, "host": host, "status": delivery.status}
        record(
            project.config.state_dir,
            {**entry, "httpStatus": delivery.http_status, "attempts": delivery.attempts},
        )
    if delivery.status != "sent":
        note_miss(project, run_id, f"webhook {host}: {delivery.error}")
        return delivery.error or "not sent"
    note_sent(project, run_id, f"webhook {host} (HTTP {delivery.http_status})", event)
    return None


def _signing_secret(project: Project) -> tuple[str | None, str | None]:
    """(the key that signs, or None) and a refusal: ``notify.secret`` is the key or the name of a .env one.

    A value written like a variable name that ``.env`` does not define is refused rather than used as
    the key: a receiver could never verify it, and the user meant the variable.
    """
    configured = project.config.notify_secret
    if not configured:
        return None, None
    if configured in project.env:
        return project.env[configured], None

    if re.fullmatch(r"[A-Z_][A-Z0-9_]*", configured):
        return None, (
            f"notify.secret names {configured}, which .env does not define; not sent unsigned"
            f" (add {configured}=... to .env)"
        )
    return configured, None


def note_miss(project: Project, run_id: str | None, message: str) -> None:

    with contextlib.suppress(Exception):
        log_miss(project.config.state_dir, run_id, message, _redact(project))


_TOLD = {"failed": "a failed run", "recovered": "a recovery", "scheduler": "a scheduler problem"}


def note_sent(project: Project, run_id: str | None, channel: str, event: str) -> None:
    """A message went out: one line in notify.log (``sent desktop (notify-send): a failed run``), so
    doctor can tell the last delivery."""
    with contextlib.suppress(Exception):
        log_sent(project.config.state_dir, run_id, channel, _TOLD.get(event, event), _redact(project))


def _redact(project: Project) -> Any:
    try:
        return project.redactor.text
    except Exception:
        return None
