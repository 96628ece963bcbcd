"""``croft init [DIR]``."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from croft.agents.agentfiles import plan_agent_files, write_agent_files
from croft.cli.flag import flag
from croft.cli.render import json_option, run_command
from croft.core.problems import CroftError
from croft.core.result import Next, Result
from croft.project.config import load_project
from croft.project.scaffold import init_project


def _init(directory: str, timezone: str | None) -> Result:

    planned = plan_agent_files(
        Path(directory).resolve()
    )  # a file that cannot take the block: nothing written
    data = init_project(Path(directory), timezone)
    agents = write_agent_files(Path(str(data["root"])), planned)
    data["written"] = [*data["written"], *agents["written"]]  # type: ignore[misc]
    data["kept"] = [*data["kept"], *agents["unchanged"]]  # type: ignore[misc]
    go = f"cd {shlex.quote(str(data['root']))} && " if Path(directory).resolve() != Path.cwd() else ""
    return Result(
        data=data,
        next=[
            Next(f"{go}croft validate", "see each asset, its inputs and its schedule"),
            Next(
                f"{go}croft run",
                "build every asset once; a run by a person also approves it for the scheduler",
            ),
        ],
    )


def _agents(directory: str) -> Result:
    """``croft init --agents``: refresh croft's block in the agent files of an existing project."""

    root = load_project(Path(directory)).root
    found = write_agent_files(root)
    return Result(
        data={"root": str(root), "agents": True, "written": found["written"], "kept": found["unchanged"]}
    )


def _human(result: Result) -> str:
    data = result.data
    if data.get("agents"):
        lines = [f"croft's agent files in {data['root']}:"]
        lines += [f"  + {rel} (croft's block written; your text outside it kept)" for rel in data["written"]]
        lines += [f"  = {rel} (already up to date)" for rel in data["kept"]]
        return "\n".join(lines)
    lines = [f"Created a croft project in {data['root']} (timezone {data['timezone']})"]
    lines += [f"  + {rel}" for rel in data["written"]]
    lines += [f"  = {rel} (kept as it was)" for rel in data["kept"]]
    return "\n".join(lines)


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--timezone", help="IANA zone for schedules (default: this machine's zone).")
@flag(
    "--agents",
    help="In an existing project: write or refresh croft's block in AGENTS.md and .claude/skills/croft/SKILL.md.",
)
@json_option
@run_command(_human)
def command(directory: str, timezone: str | None, agents: bool) -> Result:
    """Make a working project in DIRECTORY (default: here): croft.json, assets/, lib/, .env.example,
    an example ingest and an example SQL transform that run offline, and the agent files (AGENTS.md,
    .claude/skills/croft/SKILL.md). With --agents, only refresh croft's block in the agent files of an
    existing project, keeping your own text around it."""
    if agents:
        if timezone is not None:
            raise CroftError(
                "USAGE",
                "--timezone makes a new project; --agents only refreshes the agent files of an existing one",
                "Run `croft init --agents` without --timezone.",
            )
        return _agents(directory)
    return _init(directory, timezone)
