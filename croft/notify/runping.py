"""Run pings in healthchecks.io's format: ``<url>/start`` when a scheduled run starts, ``<url>`` when it
succeeds, ``<url>/fail`` (a POST of its redacted log tail) when it fails.

``notify.runPing`` in croft.json pings for each scheduled run; an asset's own ``run_ping`` for each of
its steps in one. Either is a URL or the name of a ``.env`` key holding one (``notify.policy``). Runs by
hand are not pinged: a monitor counts the scheduler's runs. A ping that fails is one line in
``notify.log`` and never fails the run; each waits a few seconds at most (``notify.ping``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from croft.notify.log import host_of, is_dry, log_miss, record
from croft.notify.ping import ping
from croft.notify.policy import Policy, resolve_env_value

if TYPE_CHECKING:
    from croft.project.config import Project

__all__ = ["TAIL_BYTES", "RunPings", "ping_url", "tail_of"]

TAIL_BYTES = 10_000  # healthchecks keeps the first 100 kB of a body; a tail this long reads in one screen


def ping_url(base: str, event: str) -> str:
    """``<base>/start``, ``<base>``, ``<base>/fail`` or ``<base>/log`` (an event that changes no check's
    state: ``croft notify test``), as healthchecks.io reads them (a query kept last)."""
    path, sep, query = base.partition("?")
    path = path.rstrip("/")
    suffix = {"start": "/start", "fail": "/fail", "log": "/log"}.get(event, "")
    return f"{path}{suffix}{sep}{query}"


def tail_of(logs: Sequence[tuple[str, str]], redact: Callable[[str], str], limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` characters of the logs of the failed steps (``(name, text)``: the engine reads
    each from the history, where an ended step's log lives), each under its name, redacted."""
    parts = [f"== {name} ==\n{text[-limit:]}" for name, text in logs]
    return redact("\n".join(parts))[-limit:]


class RunPings:
    """The pings of one scheduled run: the project's for the run, each asset's for its step."""

    def __init__(self, project: Project, policy: Policy, run_id: str):
        self.project, self.policy, self.run_id = project, policy, run_id

    def run_started(self) -> None:
        self._send(self.policy.run_ping(None), "start", None)

    def run_ended(self, ok: bool, body: str) -> None:
        self._send(self.policy.run_ping(None), "success" if ok else "fail", None if ok else body)

    def step_started(self, asset: str) -> None:
        self._send(self.policy.run_ping(asset), "start", None)

    def step_ended(self, asset: str, ok: bool, body: str) -> None:
        self._send(self.policy.run_ping(asset), "success" if ok else "fail", None if ok else body)

    def _send(self, configured: str | None, event: str, body: str | None) -> None:
        """One ping; never raises. A miss is one line in notify.log (the URL by its host only)."""
        if not configured:
            return
        state = self.project.config.state_dir
        try:
            base, refusal = resolve_env_value(self.project, configured)
            if base is None:
                log_miss(state, self.run_id, f"run ping: {refusal}")
                return
            url = ping_url(base, event)
            data = None if body is None else body.encode("utf-8")
            error = ping(url, body=data)
            if is_dry():
                record(state, {"runId": self.run_id, "kind": "runPing", "event": event, "ok": error is None})
            if error is not None:
                log_miss(state, self.run_id, f"run ping {host_of(url)} ({event}): {error}", self._redact())
        except Exception as exc:
            log_miss(state, self.run_id, f"run ping ({event}): {type(exc).__name__}", self._redact())

    def _redact(self) -> Callable[[str], str] | None:
        try:
            return self.project.redactor.text
        except Exception:
            return None
