"""``croft notify test``: a test message to every channel a project configures, and how each one went.

What a person runs right after configuring a channel, and what ``doctor`` points to when notifications
go missing. Each channel goes through the very code a real alert uses (``notify.send``'s
``deliver_*``, the stdlib ping of ``notify.ping``), so a channel that passes here is one an alert reaches;
a miss is also the usual line in ``notify.log``. Only the pings differ in what they send, so a test
never changes what a monitor believes: ``notify.ping`` gets its usual GET (the tick sends one every
minute anyway), and each run ping gets healthchecks' ``/log``, an event that marks no run started,
succeeded or failed.

Targets are shown as logs show them: a URL by its host only (a webhook's path often holds its token),
an Apprise URL by its scheme and its place in ``notify.urls`` (its host is often a token itself), a
``.env`` key by its name; then redacted.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from croft.core.problems import Problem, problem
from croft.core.result import Result
from croft.notify.channels import scheme_of
from croft.notify.log import host_of, is_dry, scrub_urls
from croft.notify.message import test_message, test_payload
from croft.notify.ping import ping
from croft.notify.policy import Policy, resolve_env_value
from croft.notify.runping import ping_url
from croft.notify.send import deliver_channel, deliver_desktop, deliver_webhook
from croft.project.config import Project

__all__ = ["Tried", "notify_test", "try_channels"]

EVENT = "test"


@dataclass(frozen=True)
class Tried:
    """One channel's answer to the test: ``channel`` its kind, ``target`` where (redacted), ``error``
    why it failed (None when it went out)."""

    channel: str  # desktop | webhook | apprise | ping | runPing
    target: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "target": self.target, "ok": self.ok, "error": self.error}


def try_channels(project: Project) -> list[Tried]:
    """Send the test message to each configured channel, in the order an alert goes out; never raises
    for one channel (its error is its answer)."""
    config = project.config
    redact = project.redactor.text
    name = project.root.name
    title, body = test_message(name)
    tried: list[Tried] = []

    def attempt(channel: str, target: str, send: Any) -> None:
        try:
            error = send()
        except Exception as exc:  # a channel's own crash is its answer, never the command's
            error = f"{type(exc).__name__}: {exc}"
        tried.append(
            Tried(channel, redact(target), None if error is None else scrub_urls(redact(str(error))))
        )

    if config.notify_desktop:
        attempt("desktop", _desktop_target(), lambda: deliver_desktop(project, None, EVENT, title, body))
    if config.notify_webhook:
        url = config.notify_webhook
        payload = test_payload(name, title, body)
        attempt("webhook", host_of(url), lambda: deliver_webhook(project, None, EVENT, url, payload))
    for place, configured in enumerate(config.notify_urls):
        attempt(
            "apprise",
            f"{_channel_name(configured)} (notify.urls[{place}])",
            lambda configured=configured: _sent_or_why(
                deliver_channel(project, None, EVENT, configured, title, body)
            ),
        )
    if config.notify_ping:
        attempt("ping", host_of(config.notify_ping), lambda: _ping(config.notify_ping, None))
    for owner, configured in _run_pings(project):
        base, refusal = resolve_env_value(project, configured)
        where = host_of(base) if base else configured
        target = where if owner is None else f"{where} ({owner})"
        attempt(
            "runPing",
            target,
            lambda base=base, refusal=refusal: refusal or _ping(ping_url(base, "log"), body),
        )
    return tried


def notify_test(project: Project) -> Result:
    """``croft notify test``: data ``{"project", "channels": [...]}``; NOTIFY_FAILED (exit 1) naming each
    channel that failed, or that none is configured."""
    tried = try_channels(project)
    data = {"project": project.root.name, "channels": [t.to_dict() for t in tried]}
    failed = [t for t in tried if not t.ok]
    problems: list[Problem] = []
    if not tried:
        problems.append(
            problem(
                "NOTIFY_FAILED",
                f"{project.root / 'croft.json'} configures no notification channel (desktop is off and"
                " notify sets no webhook, urls, ping or runPing): a failure would tell nobody",
                'set "notify": {"desktop": true} or a webhook in croft.json; `croft docs notifications`'
                " shows each channel",
                file="croft.json",
            )
        )
    elif failed:
        names = "; ".join(f"{t.channel} {t.target}: {t.error}" for t in failed)
        problems.append(
            problem(
                "NOTIFY_FAILED",
                f"{len(failed)} of {len(tried)} notification channel(s) failed the test: {names}",
                "fix the channel in croft.json's notify (or the .env key it names), then run"
                " `croft notify test` again; `croft docs notifications` shows each channel",
                file="croft.json",
                details={"failed": [t.to_dict() for t in failed]},
            )
        )
    return Result(data=data, problems=problems)


def _run_pings(project: Project) -> list[tuple[str | None, str]]:
    """The project's run ping, then each asset's own (by name), each configured value once."""
    policy = Policy(project)
    found: list[tuple[str | None, str]] = []
    project_ping = policy.run_ping(None)
    if project_ping:
        found.append((None, project_ping))
    seen = {value for _, value in found}
    for asset in sorted(policy.facts):
        own = policy.run_ping(asset)
        if own and own not in seen:
            seen.add(own)
            found.append((asset, own))
    return found


def _ping(url: str, body: str | None) -> str | None:
    return ping(url, body=None if body is None else body.encode("utf-8"))


def _sent_or_why(outcome: str) -> str | None:
    return None if outcome == "sent" else outcome


def _channel_name(configured: str) -> str:
    return configured if configured.startswith("$") else scheme_of(configured)


def _desktop_target() -> str:
    if is_dry():
        return "notifications.ndjson (CROFT_NOTIFY_DRY)"
    return {"darwin": "osascript", "linux": "notify-send"}.get(sys.platform, "plyer")
