"""What a notification says: the desktop title and body, and the webhook payload. Pure functions.

The desktop body is one line a person can act on from the notification alone: which assets failed, the
first error's code and message, and the command that shows the rest. Messages are redacted before they
are cut, so a secret straddling the cut can never leave half of itself behind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from croft.core.duration import words

__all__ = [
    "MESSAGE_CHARS",
    "Failed",
    "failure_message",
    "failure_payload",
    "name_list",
    "one_line",
    "recovered_message",
    "recovered_payload",
    "scheduler_message",
    "scheduler_payload",
    "slow_message",
    "slow_payload",
    "test_message",
    "test_payload",
]

MESSAGE_CHARS = 180
NAMES_SHOWN = 3
_BLANKS = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+")

Redact = Callable[[str], str]


@dataclass(frozen=True)
class Failed:
    """One asset a scheduled run failed, with its error as a problem dict (None after a crash)."""

    asset: str
    error: dict[str, Any] | None = None


def name_list(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``, then ``a, b, c and N more``."""
    if len(names) <= 1:
        return "".join(names)
    if len(names) <= NAMES_SHOWN:
        return ", ".join(names[:-1]) + " and " + names[-1]
    return ", ".join(names[:NAMES_SHOWN]) + f" and {len(names) - NAMES_SHOWN} more"


def one_line(text: str, redact: Redact, limit: int = MESSAGE_CHARS) -> str:
    """Redacted first, then control characters and whitespace runs become one space, then cut with ``…``."""
    flat = _BLANKS.sub(" ", redact(text)).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def failure_message(
    project: str,
    run_id: str,
    failed: Sequence[Failed],
    redact: Redact,
    streak: int = 1,
    reminder: bool = True,
) -> tuple[str, str]:
    """(title, body) of a failed scheduled run; ``streak`` > 1 is a streak still going: a ``reminder``
    ("still fails"), or its first word when ``notify.after`` waited for it ("failed N scheduled runs in a
    row")."""
    title = f"croft: {project}"
    if not failed:
        return title, f"A scheduled run failed. See it with: croft logs {run_id}"
    shown = next((f for f in failed if f.error), failed[0])
    what = "."
    if shown.error:
        code = str(shown.error.get("code") or "ERROR")
        what = ": " + _sentence(one_line(f"{code}: {shown.error.get('message') or ''}", redact))
    verb = "failed in a scheduled run"
    if streak > 1 and reminder:
        verb = f"{'still fails' if len(failed) == 1 else 'still fail'} in scheduled runs ({streak} in a row)"
    elif streak > 1:
        verb = f"failed {streak} scheduled runs in a row"
    names = name_list([f.asset for f in failed])
    return title, f"{names} {verb}{what} See it with: croft logs {shown.asset} --failed"


def recovered_message(project: str, recovered: Sequence[tuple[str, int]]) -> tuple[str, str]:
    """(title, body) when assets that kept failing succeed again; each pair is (asset, failures in a row)."""
    names = name_list([asset for asset, _ in recovered])
    longest = max((count for _, count in recovered), default=0)
    runs = "run" if longest == 1 else "runs"
    return (
        f"croft: {project}",
        f"{names} succeeded again after {longest} failed scheduled {runs}."
        f" See it with: croft logs {recovered[0][0]}",
    )


def scheduler_message(project: str, problem: dict[str, Any], redact: Redact) -> tuple[str, str]:
    """(title, body) when the scheduler itself cannot tick the project (its history unreadable, its disk
    full, its tick failing): the problem, and the command that fixes it or shows the whole story."""
    code = str(problem.get("code") or "ERROR")
    what = _sentence(one_line(f"{code}: {problem.get('message') or ''}", redact))
    fix = (problem.get("fix") or {}).get("command")
    then = f" Fix: {one_line(str(fix), redact)}" if fix else " See it with: croft doctor"
    return f"croft: {project}", f"The scheduler cannot run this project's ingests. {what}{then}"


def scheduler_payload(project: str, title: str, body: str, problem: dict[str, Any]) -> dict[str, Any]:
    """The webhook body when the scheduler cannot tick the project: ``event: scheduler``, no run, the
    problem, and its fix (or ``croft doctor``) as the next step."""
    fix = (problem.get("fix") or {}).get("command")
    summary = {
        "data": {"runId": None, "status": "not_ticking", "steps": []},
        "problems": [problem],
        "next": [{"command": fix or "croft doctor", "reason": "what stops the scheduler"}],
        "exit": 1,
        "ok": False,
    }
    return _payload(project, f"{title} — {body}", "scheduler", 1, summary)


def failure_payload(
    project: str,
    title: str,
    body: str,
    *,
    run_id: str,
    failed: Sequence[Failed],
    streak: int,
    summary: dict[str, Any] | None,
) -> dict[str, Any]:
    """The webhook body of a failure: the run's stored summary when there is one, else one built here."""
    if summary and isinstance(summary.get("data"), dict):
        return _payload(project, f"{title} — {body}", "failed", streak, summary)
    shown = next((f for f in failed if f.error), failed[0] if failed else None)
    command = f"croft logs {shown.asset} --failed" if shown else f"croft logs {run_id}"
    built = {
        "data": {"runId": run_id, "status": "failed", "steps": []},
        "problems": [f.error for f in failed if f.error],
        "next": [{"command": command, "reason": "see what failed"}],
        "exit": 1,
        "ok": False,
    }
    return _payload(project, f"{title} — {body}", "failed", streak, built)


def recovered_payload(
    project: str, title: str, body: str, *, run_id: str, streak: int, summary: dict[str, Any] | None
) -> dict[str, Any]:
    """The webhook body of a recovery: the succeeding run's summary, ``event: recovered``."""
    if not (summary and isinstance(summary.get("data"), dict)):
        summary = {
            "data": {"runId": run_id, "status": "succeeded", "steps": []},
            "problems": [],
            "next": [],
            "exit": 0,
            "ok": True,
        }
    return _payload(project, f"{title} — {body}", "recovered", streak, summary)


def _payload(project: str, text: str, event: str, streak: int, summary: dict[str, Any]) -> dict[str, Any]:
    """Keys in a fixed order; progress and confirmation tokens of the summary are never sent."""
    data = summary.get("data") or {}
    return {
        "project": project,
        "text": text,
        "event": event,
        "streak": streak,
        "data": {"runId": data.get("runId"), "status": data.get("status"), "steps": data.get("steps") or []},
        "problems": list(summary.get("problems") or []),
        "next": list(summary.get("next") or []),
        "exit": summary.get("exit", 0 if summary.get("ok") else 1),
        "ok": bool(summary.get("ok")),
    }


def freshness_message(
    project: str, asset: str, age: str, within: str, cause: str, fix: str, reminder: bool = False
) -> tuple[str, str]:
    """(title, body) when an asset's data is older than its ``fresh_within`` promise: how old, the
    promise, the cause and the command that helps."""
    still = "is still" if reminder else "is"
    return (
        f"croft: {project}",
        f"{asset} {still} older than promised: its data is {age} old (fresh within {within}),"
        f" because {cause}. Fix: {fix}",
    )


def fresh_again_message(project: str, asset: str, age: str, within: str) -> tuple[str, str]:
    return (
        f"croft: {project}",
        f"{asset} is fresh again: its data is {age} old (fresh within {within}). See it with: croft status",
    )


def freshness_payload(
    project: str, title: str, body: str, event: str, problem: dict[str, Any] | None, fix: str | None
) -> dict[str, Any]:
    """The webhook body of a freshness event: ``event`` ``freshness`` (with the FRESHNESS_BREACHED
    problem and its fix as the next step) or ``fresh`` (the promise holds again); no run."""
    summary: dict[str, Any] = {
        "data": {"runId": None, "status": "stale" if problem else "fresh", "steps": []},
        "problems": [problem] if problem else [],
        "next": [{"command": fix, "reason": "what keeps it from being refreshed"}] if fix else [],
        "exit": 1 if problem else 0,
        "ok": problem is None,
    }
    return _payload(project, f"{title} — {body}", event, 1 if problem else 0, summary)


SlowStep = tuple[str, float, float]  # (asset, seconds it has run, its slow_after in seconds)


def slow_message(project: str, run_id: str, steps: Sequence[SlowStep]) -> tuple[str, str]:
    """(title, body) when a scheduled run passes an asset's ``slow_after``: a notice, not a failure, so
    it says the run goes on (``max_runtime`` still ends it) and where to watch it."""
    names = name_list([asset for asset, _, _ in steps])
    asset, took, bound = steps[0]
    verb = "is" if len(steps) == 1 else "are"
    return (
        f"croft: {project}",
        f"{names} {verb} slow in scheduled run {run_id}: {asset} has run {words(took)} (slow after"
        f" {words(bound)}). It keeps running; max_runtime still ends it. See it with: croft logs {run_id}",
    )


def slow_payload(
    project: str, title: str, body: str, run_id: str, steps: Sequence[SlowStep]
) -> dict[str, Any]:
    """The webhook body of a slow run: ``event: slow``, the run still running, each slow step with how
    long it has run and its bound (seconds); no problem, since nothing failed."""
    summary: dict[str, Any] = {
        "data": {
            "runId": run_id,
            "status": "running",
            "steps": [
                {"asset": a, "status": "running", "runningS": round(took, 1), "slowAfterS": bound}
                for a, took, bound in steps
            ],
        },
        "problems": [],
        "next": [{"command": f"croft logs {run_id}", "reason": "see how far the run got"}],
        "exit": 0,
        "ok": True,
    }
    return _payload(project, f"{title} — {body}", "slow", 0, summary)


def test_message(project: str) -> tuple[str, str]:
    """(title, body) of ``croft notify test``: says what it is, so nobody takes it for an alert."""
    return (
        f"croft: {project}",
        "A test message from `croft notify test`: this channel reaches you. Nothing failed.",
    )


def test_payload(project: str, title: str, body: str) -> dict[str, Any]:
    """The webhook body of ``croft notify test``: ``event: test``, no run, nothing wrong."""
    summary: dict[str, Any] = {
        "data": {"runId": None, "status": "test", "steps": []},
        "problems": [],
        "next": [],
        "exit": 0,
        "ok": True,
    }
    return _payload(project, f"{title} — {body}", "test", 0, summary)
