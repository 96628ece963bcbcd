"""``croft mcp``: a Model Context Protocol server over stdio, on the official ``mcp`` SDK (the ``mcp``
extra), for coding agents.

Each tool runs one ``croft … --json`` process in the project and returns its envelope as it is, so an
agent reads exactly what the command says and no rule is decided a second time. Every such process gets
``CROFT_AGENT=1``: a run or preview an agent starts does its work but approves no code for the scheduler
(only a person's run does). A child process also keeps the server's stdout, which is the protocol's
stream, away from asset code that prints. Reading tools are always on; ``run`` only with ``--allow-run``;
no tool turns scheduling on, off or paused (those are on the ask-the-user-first list).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from croft import __version__
from croft.agents.askfirst import ASK_FIRST, PERSON_RELEASES
from croft.core.children import croft_env
from croft.core.result import Result

__all__ = ["ALWAYS_ON", "build_server", "check", "serve"]

OUTPUT_LIMIT = 8_000_000  # bytes of one command's envelope; `croft logs` of a long history stays well under
READ_DEADLINE_S = 300.0  # a reading command (status, logs, validate, docs, schedule)
WORK_DEADLINE_S = 3600.0  # a preview or a run: SIGTERM then, which croft records as interrupted
STDERR_KEPT = 4000  # bytes of a command's stderr shown when it printed no envelope
STOP_GRACE_S = 10.0  # after SIGTERM, how long a command has to record itself interrupted and answer

# the tools every server has (preview among them: it commits nothing); `run` only with --allow-run
ALWAYS_ON = (
    "status",
    "context",
    "logs",
    "validate",
    "preview",
    "schedule_explain",
    "schedule_status",
    "docs",
)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def _instructions() -> str:
    ask = "; ".join(what for what, _ in ASK_FIRST)
    return (
        "croft keeps a folder of data assets fresh. Read `context` first, then work as status -> logs ->"
        " validate -> preview -> run. A run or preview you start builds data but never approves code for"
        f" the scheduler: held code waits for a person ({PERSON_RELEASES}). Ask the user first: {ask}."
    )


async def _croft(root: Path, args: list[str], deadline: float) -> CallToolResult:
    """Run ``croft ARGS`` (ARGS already end in ``--json`` and any positionals after ``--``) in ``root`` as
    an agent, and return its one envelope."""
    env = croft_env()
    env["CROFT_AGENT"] = "1"
    argv = [sys.executable, "-m", "croft", *args]
    out, err = bytearray(), bytearray()
    ended: list[str] = []  # why croft was stopped, if it was: "too big" or "too long"
    # stdin from /dev/null: the server's own stdin is the protocol's stream
    process: Process = await anyio.open_process(argv, cwd=str(root), env=env, stdin=subprocess.DEVNULL)

    async def read_out() -> None:
        if await _read_into(process.stdout, out, OUTPUT_LIMIT):
            ended.append("too big")
            process.kill()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_out)
            group.start_soon(_tail_into, process.stderr, err, STDERR_KEPT)
            with anyio.move_on_after(deadline) as scope:
                await process.wait()
            if scope.cancelled_caught:  # SIGTERM: a run records itself interrupted and still answers
                ended.append("too long")
                process.send_signal(signal.SIGTERM)
                with anyio.move_on_after(STOP_GRACE_S):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
    if "too big" in ended:
        return _failure(f"croft {' '.join(args)} printed more than {OUTPUT_LIMIT:,} bytes; ask for less")
    try:
        envelope = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        why = f"ran past {deadline:g} s and was stopped" if ended else f"exited {process.returncode}"
        tail = err.decode("utf-8", "replace")
        return _failure(f"croft {' '.join(args)} {why} without an answer: {tail}")
    text = json.dumps(envelope, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=envelope)


async def _read_into(stream: Any, into: bytearray, limit: int) -> bool:
    """Read ``stream`` to its end into ``into``; True (and stop reading) when it holds more than ``limit``."""
    if stream is None:
        return False
    async for chunk in stream:
        if len(into) + len(chunk) > limit:
            into.extend(chunk[: max(0, limit - len(into))])
            return True
        into.extend(chunk)
    return False


async def _tail_into(stream: Any, into: bytearray, keep: int) -> None:
    """Read ``stream`` to its end (so the child never blocks on a full pipe), keeping its last ``keep`` bytes."""
    if stream is None:
        return
    async for chunk in stream:
        into.extend(chunk)
        del into[:-keep]


def _failure(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _positional(*values: str | None) -> list[str]:
    """Positionals after ``--``, so a value that starts with ``-`` is never read as an option."""
    given = [v for v in values if v]
    return ["--", *given] if given else []


def build_server(root: Path, allow_run: bool) -> MCPServer:
    """The server for the project at ``root``: the reading tools, and ``run`` when ``allow_run``."""
    server = MCPServer("croft", version=__version__, instructions=_instructions())

    async def status() -> CallToolResult:
        """croft status: every asset's kind, rows, last load, freshness, last run, schedule and hold."""
        return await _croft(root, ["status", "--json"], READ_DEADLINE_S)

    async def context(asset: str | None = None) -> CallToolResult:
        """croft context: read this first. The project, each asset compactly, what is running, recent
        failures with log tails, the fixes croft computed and what to ask the user first (at most 20 KB;
        `truncated` says when something was left out; give `asset` for one asset whole)."""
        extra = ["--asset", asset] if asset else []
        return await _croft(root, ["context", *extra, "--json"], READ_DEADLINE_S)

    async def logs(
        target: str | None = None, failed: bool = False, runs: bool = False, since: str | None = None
    ) -> CallToolResult:
        """croft logs: attempts newest first with their log tails, for one asset or one run id (r_...);
        `failed` for failures only, `runs` to list runs (each says who started it: person, agent or
        schedule), `since` an ISO time."""
        args = ["logs", "--json", *(["--failed"] if failed else []), *(["--runs"] if runs else [])]
        args += ["--since", since] if since else []
        return await _croft(root, [*args, *_positional(target)], READ_DEADLINE_S)

    async def validate() -> CallToolResult:
        """croft validate: check every asset without running it (inputs, schedule with its next fires,
        problems with their fixes)."""
        return await _croft(root, ["validate", "--json"], READ_DEADLINE_S)

    async def preview(asset: str) -> CallToolResult:
        """croft preview ASSET: run it without committing and show sample rows and what a real run would
        change. It approves no code for the scheduler (you are an agent)."""
        return await _croft(root, ["preview", "--json", *_positional(asset)], WORK_DEADLINE_S)

    async def schedule_explain(
        schedule: str, tz: str | None = None, after: str | None = None, n: int = 3
    ) -> CallToolResult:
        """croft schedule explain: a schedule phrase or cron as cron, with its next `n` fires in the zone
        (default: the project's)."""
        args = ["schedule", "explain", "--json", "-n", str(n)]
        args += ["--tz", tz] if tz else []
        args += ["--after", after] if after else []
        return await _croft(root, [*args, *_positional(schedule)], READ_DEADLINE_S)

    async def schedule_status() -> CallToolResult:
        """croft schedule status: the scheduling setting, the last tick, and each asset's schedule, next
        and last fire, whether it is due and what holds it. Turning scheduling on, off or paused is the
        user's decision: ask them."""
        return await _croft(root, ["schedule", "status", "--json"], READ_DEADLINE_S)

    async def docs(topic: str | None = None) -> CallToolResult:
        """croft docs: a guide (assets, running, scheduling, agents, ...) or a problem code's page; with no
        topic, the list."""
        return await _croft(root, ["docs", "--json", *_positional(topic)], READ_DEADLINE_S)

    for fn in (status, context, logs, validate, schedule_explain, schedule_status, docs):
        server.add_tool(fn, annotations=READ_ONLY)
    server.add_tool(preview, annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))

    if allow_run:

        async def run(assets: list[str] | None = None, only: bool = False) -> CallToolResult:
            """croft run: build the named assets (and the stale transforms downstream unless `only`), or
            every ingest and stale transform. It writes the warehouse but approves no code: an asset whose
            code no person has run stays held from the scheduler, and the answer names the command the
            person runs to release it."""
            args = ["run", "--json", *(["--only"] if only else [])]
            return await _croft(root, [*args, *_positional(*(assets or []))], WORK_DEADLINE_S)

        # it writes the warehouse (a replace can drop rows): a client that asks before such a tool asks here
        server.add_tool(run, annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    return server


def check(root: Path, allow_run: bool) -> Result:
    """What ``croft mcp --check`` says: the server can start for ``root``, with these tools."""

    tools = anyio.run(build_server(root, allow_run).list_tools)
    return Result(data={"project": str(root), "sdk": version("mcp"), "tools": [t.name for t in tools]})


def serve(root: Path, allow_run: bool) -> None:
    """Serve over stdio until the client closes the stream."""
    build_server(root, allow_run).run("stdio")
