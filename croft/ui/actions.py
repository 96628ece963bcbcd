"""The page's buttons, each the function its command calls: Run now is ``croft run ASSET`` (a person's
run, which approves the code it runs), Pause 2h is ``croft schedule pause --for 2h``, Resume is
``croft schedule on`` keeping the way the project was ticked."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from typing import IO, Any

from croft.core.children import croft_argv, croft_env, detach
from croft.core.problems import CroftError, Problem
from croft.core.result import Result
from croft.core.suggest import unknown_asset
from croft.history.peek import peek
from croft.project.config import Project
from croft.project.discovery import discover
from croft.scheduler.control.assetpause import pause_asset, resume_asset
from croft.scheduler.control.commands import schedule_on, schedule_pause
from croft.scheduler.jobs.record import installed_backend
from croft.scheduler.setting import read_scheduling_file

__all__ = ["PAUSE_LENGTH", "pause", "resume", "run_now"]

PAUSE_LENGTH = "2h"
START_WAIT_S = 15.0  # how long Run now waits for its run's row (or its refusal) before answering


def run_now(project: Project, asset: str) -> Result:
    """Start ``croft run ASSET`` for this project, as a person would in a terminal, and answer once its
    run is recorded (``runId``) or it has refused (its own envelope's problems).

    It runs as a child process rather than inside the server: the asset's code prints, may exit or
    hold signals, and must not take the page down with it; the child is the command itself, so trigger,
    approval and history are exactly those of ``croft run``. It has a session of its own, so closing
    the page (Ctrl-C) does not interrupt it.
    """
    facts, _ = discover(project)
    if asset not in facts:
        raise unknown_asset(asset, facts, "run")
    argv = croft_argv("run", "--project", str(project.root), "--json", "--", asset)
    with tempfile.TemporaryFile() as out:  # the child's envelope; the child keeps its own descriptor
        try:
            child = detach(argv, project.root, out, croft_env())
        except OSError as exc:
            raise CroftError(
                "INTERNAL_ERROR", f"croft run {asset} could not start: {exc}", "Try it in a terminal."
            ) from None
        try:
            return _started(project, asset, child, out)
        finally:
            threading.Thread(target=child.wait, daemon=True).start()  # reaped when it ends: no zombie


def _started(project: Project, asset: str, child: Any, out: IO[bytes]) -> Result:
    history = project.config.state_dir / "runs.sqlite"
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        rows = peek(
            history, "SELECT id FROM runs WHERE pid = ? ORDER BY started_at DESC LIMIT 1", (child.pid,)
        )
        if rows:
            return Result(data={"runId": rows[0][0], "pid": child.pid, "asset": asset})
        if child.poll() is not None:
            return _ended(child.returncode, out, asset)
        time.sleep(0.05)
    return Result(data={"runId": None, "pid": child.pid, "asset": asset})


def _ended(code: int, out: IO[bytes], asset: str) -> Result:
    """A child that ended before its run was seen: its envelope says why (or that it ran very fast)."""
    out.seek(0)
    text = out.read().decode("utf-8", "replace")
    try:
        envelope = json.loads(text)
    except ValueError:
        raise CroftError(
            "INTERNAL_ERROR",
            f"croft run {asset} ended with exit {code} and no answer",
            "Run it in a terminal to see what it says.",
        ) from None
    data = envelope.get("data") or {}
    problems = [Problem.from_dict(p) for p in envelope.get("problems") or []]
    return Result(
        data={"runId": data.get("runId"), "asset": asset, "status": data.get("status")},
        problems=problems,
        ok=bool(envelope.get("ok")),
    )


def pause(project: Project, asset: str | None = None) -> Result:
    """Pause 2h: the project, or one asset of it (a row's button)."""
    if asset:
        return pause_asset(project, asset, PAUSE_LENGTH)
    return schedule_pause(project, PAUSE_LENGTH)


def resume(project: Project, asset: str | None = None) -> Result:
    """``croft schedule resume ASSET`` for a row's button; for the project, ``croft schedule on`` as it
    is ticked now: a ``--no-os-job`` project stays one, and the OS job stays on the backend it was
    installed with."""
    if asset:
        return resume_asset(project, asset)
    setting = read_scheduling_file(project.config.state_dir)
    if setting.via == "serve":
        return schedule_on(project, no_os_job=True)
    backend = installed_backend()
    return schedule_on(project, backend_name=backend.name if backend is not None else "auto")
