"""``croft mcp [--allow-run] [--check] [--project DIR]``: the Model Context Protocol server coding agents
connect to (``croft.agents.mcpserver``), from the optional ``mcp`` extra."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import click

from croft.cli.flag import flag
from croft.cli.project_option import load, project_option
from croft.cli.render import json_option, run_command
from croft.core.problems import CroftError
from croft.core.result import Result

# The packages the server imports; an ImportError naming one of them means the extra is missing.
_SDK_PACKAGES = ("mcp", "mcp_types", "anyio", "pydantic", "pydantic_core")


def _missing() -> CroftError:

    try:
        have = version("mcp")
    except PackageNotFoundError:
        found = ", which is not installed"
    else:
        parts = [int(p) if p.isdigit() else 0 for p in have.split(".")[:2]]
        found = (
            f"; this environment has mcp {have}, older than the 2.3 croft mcp is built on"
            if parts < [2, 3]
            else f"; mcp {have} is installed but could not be imported"
        )
    return CroftError(
        "MCP_MISSING",
        f"croft mcp needs the Model Context Protocol SDK (the `mcp` package){found}",
        "Install croft's mcp extra into the environment croft runs from, then start croft mcp again.",
        fix={"kind": "command", "description": "install the extra", "command": "pip install 'croft[mcp]'"},
    )


def _server_module() -> Any:
    try:
        from croft.agents import mcpserver
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in _SDK_PACKAGES:
            raise _missing() from None
        raise
    return mcpserver


def _human(result: Result) -> str:
    data = result.data
    return f"croft mcp can start for {data['project']} (mcp {data['sdk']}): tools {', '.join(data['tools'])}"


@click.command("mcp")
@flag(
    "--allow-run",
    help="Also offer a run tool. An agent's run builds data but never approves code for the scheduler.",
)
@flag("--check", help="Say whether the server can start here, and its tools; then exit.")
@project_option
@json_option
@run_command(_human)
def command(allow_run: bool, check: bool, project_dir: str | None) -> Result:
    """Serve the Model Context Protocol over stdio for coding agents (Claude Code, Cursor, Codex): status,
    context, logs, validate, preview, schedule explain and status, and docs, each returning croft's JSON
    envelope. No tool turns scheduling on, off or paused. `croft docs agents` shows how to connect."""
    project = load(project_dir)  # a folder that is no project fails here, before any client waits on it
    server = _server_module()
    if check:
        return server.check(project.root, allow_run)
    server.serve(project.root, allow_run)
    sys.exit(0)  # the client closed the stream: nothing more may be written to it
