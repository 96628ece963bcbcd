"""``croft run [ASSET...] [--only]``.

A scheduled run (``croft run --due …``, started by the tick with an argv croft wrote) is handed here by
``croft.cli.main`` before click is built: a backlog starts hundreds of them, and click would cost each
a tenth of its start. Every other form goes through click; ``command`` is built when click asks for it.
"""

from __future__ import annotations

import os
from typing import Any

from croft.cli.project_option import load
from croft.cli.render import command_line, respond, run_command
from croft.core.result import Result


def _human(result: Result) -> str:
    data = result.data
    if not data.get("runId"):
        return ""
    lines = [f"run {data['runId']}: {data['status']}"]
    for step in data.get("steps", []):
        rows = step.get("rows") or {}
        counts = (
            f" +{rows.get('added', 0)} ~{rows.get('updated', 0)} -{rows.get('deleted', 0)}"
            f" ={rows.get('unchanged', 0)}"
            if rows
            else ""
        )
        tail = f" ({step['reason']})" if step["status"] == "skipped" else ""
        error = step.get("error")
        if error:
            tail = f" {error['code']}: {error['message']}"
        lines.append(f"  {step['asset']:<24} {step['status']:<11}{counts}{tail}")
    return "\n".join(lines)


def work(
    assets: tuple[str, ...],
    only: bool,
    due: bool,
    run_id: str | None,
    project_dir: str | None,
    wait: bool = False,
) -> Result:
    """Run every ingest and the stale transforms, or the named ASSETS and the stale transforms downstream.

    A run started by a person approves the code it ran for the scheduler.
    """
    from croft.engine.runner import RunOptions, run_assets

    if due or run_id:
        return _due(assets, only or wait, due, run_id, project_dir)

    from croft.engine.settings import starter

    trigger, human = starter()
    options = RunOptions(
        selectors=list(assets), only=only, argv=command_line(), wait=wait, trigger=trigger, human=human
    )
    return run_assets(load(project_dir), options)


def __getattr__(name: str) -> Any:
    if name != "command":
        raise AttributeError(name)
    import click

    from croft.cli.project_option import project_option
    from croft.cli.render import json_option

    @click.command("run")
    @click.argument("assets", nargs=-1)
    @click.option(
        "--only", is_flag=True, help="Run just the named assets, not the stale transforms downstream."
    )
    @click.option(
        "--due",
        is_flag=True,
        help="Run as the scheduler does (what `croft tick` starts): holds re-checked, no approval, no waiting.",
    )
    @click.option(
        "--wait", is_flag=True, help="When another run is writing an asset this run needs, wait for it."
    )
    @click.option("--run-id", hidden=True, help="The run id the tick noted for this scheduled run.")
    @project_option
    @json_option
    @run_command(_human)
    def command(
        assets: tuple[str, ...],
        only: bool,
        due: bool,
        wait: bool,
        run_id: str | None,
        project_dir: str | None,
    ) -> Result:
        """Run every ingest and the stale transforms, or the named ASSETS and the stale transforms downstream.

        A run started by a person approves the code it ran for the scheduler.
        """
        return work(assets, only, due, run_id, project_dir, wait)

    globals()["command"] = command
    return command


def due_args(args: list[str]) -> tuple[bool, str | None, str | None, list[str]] | None:
    """``(--json, --run-id, --project, assets)`` when ``args`` (after ``run``) are a scheduled run as the tick
    starts one (``--due`` first, then only those flags and asset names); None: let click parse them."""
    if args[:1] != ["--due"]:
        return None
    as_json, run_id, project, assets = False, None, None, []
    rest = args[1:]
    while rest:
        word = rest.pop(0)
        if word == "--json":
            as_json = True
        elif word in ("--run-id", "--project") and rest:
            value = rest.pop(0)
            if word == "--run-id":
                run_id = value
            else:
                project = value
        elif word.startswith("-"):
            return None
        else:
            assets.append(word)
    if project is not None and not os.path.isdir(project):
        return None
    return as_json, run_id, project, assets


def run_due(args: list[str]) -> None:
    """``croft run --due …`` as the tick starts it, without click (the tick starts one per group; click
    would cost each a tenth of its start): the same work and the same envelope."""
    found = due_args(args)
    assert found is not None, "run_due() takes what due_args() accepted"
    as_json, run_id, project, assets = found
    respond(as_json, _human, _due, tuple(assets), False, True, run_id, project, ["run", *args])


def _due(
    assets: tuple[str, ...],
    only: bool,
    due: bool,
    run_id: str | None,
    project_dir: str | None,
    argv: list[str] | None = None,
) -> Result:
    from croft.core.problems import CroftError
    from croft.scheduler.tick.duerules import due_run

    if not due or only:
        raise CroftError(
            "USAGE",
            "--run-id goes with --due only"
            if not due
            else "--due runs what the scheduler would; it does not go with --only or --wait",
            "croft run --due ASSET... runs the named assets as the scheduler does",
        )
    return due_run(project_dir, list(assets), run_id, argv if argv is not None else command_line())
