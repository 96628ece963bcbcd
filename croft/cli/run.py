"""``croft run [ASSET...] [--only] [--due] ...``: a run by hand, or a scheduled run as the tick starts one."""

from __future__ import annotations

import sys
from typing import Any

import click

from croft.cli.flag import flag
from croft.cli.project_option import load, project_option
from croft.cli.refill import ChunkProgress, confirm_full_refresh
from croft.cli.render import command_line, json_option, run_command
from croft.core import clock
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.engine.runner import RunOptions, run_assets
from croft.engine.settings import starter
from croft.engine.tablehealth import rows_now
from croft.engine.window import parse_refill
from croft.scheduler.tick.duerules import due_run


def _human(result: Result) -> str:
    data = result.data
    if data.get("status") == "declined":
        return "nothing was run: the table stays as it was"
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
        chunks = step.get("backfill")
        if chunks:
            earlier = f", {chunks['doneEarlier']} done earlier" if chunks["doneEarlier"] else ""
            tail = f" (backfill: {chunks['loaded']} of {chunks['total']} chunks loaded{earlier})"
        if step.get("fullRefresh"):
            tail = f" (full refresh: replaced {step['fullRefresh']['rowsReplaced']} rows)"
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
    refill_flags: tuple[bool, str | None, str | None, str | None] = (False, None, None, None),
    yes: bool = False,
) -> Result:
    """Run every ingest and the stale transforms, or the named ASSETS and the stale transforms downstream.

    A run started by a person approves the code it ran for the scheduler.
    """
    refill = parse_refill(*refill_flags, clock.now())
    if due or run_id:
        if refill is not None:
            raise CroftError(
                "USAGE",
                f"--{'full-refresh' if refill.full_refresh else 'from'} is refused from a scheduled run",
                "A person decides when a table is loaded again: run it by hand, without --due.",
            )
        return _due(assets, only or wait, due, run_id, project_dir)

    argv = command_line()
    project = load(project_dir)
    trigger, human_run = starter()
    options = RunOptions(
        selectors=list(assets),
        only=only,
        argv=argv,
        wait=wait,
        refill=refill,
        trigger=trigger,
        human=human_run,
    )
    human = "--json" not in argv
    if refill is not None and refill.full_refresh and not yes and human and _terminal():
        declined = _declined(project, assets)
        if declined is not None:
            return declined
    if refill is not None and refill.window is not None and human:
        progress = ChunkProgress()
        options.on_chunk = progress
        try:
            return run_assets(project, options)
        finally:
            progress.close()
    return run_assets(project, options)


def _terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def _declined(project: Any, assets: tuple[str, ...]) -> Result | None:
    """Ask before a full refresh replaces a table; a Result saying nothing ran when the answer is no."""
    if len(assets) != 1:
        return None  # the runner refuses it with the reason
    if confirm_full_refresh(assets[0], rows_now(project.config.database, assets[0])):
        return None
    return Result(data={"status": "declined", "steps": []}, ok=True)


@click.command("run")
@click.argument("assets", nargs=-1)
@flag("--only", help="Run just the named assets, not the stale transforms downstream.")
@flag(
    "--due",
    help="Run as the scheduler does (what `croft tick` starts): holds re-checked, no approval, no waiting.",
)
@flag("--wait", help="When another run is writing an asset this run needs, wait for it.")
@flag(
    "--full-refresh",
    help="Load the ingest again from the source's beginning into a staging table and swap it in once"
    " complete and checked (the old table and cursor stay until then); what reads it rebuilds too."
    " Asks first on a terminal.",
)
@click.option(
    "--from",
    "start",
    metavar="DATE",
    help="Backfill: load the ingest again from this date or ISO time (UTC), merging by key; the saved"
    " cursor never moves back. `croft docs backfill`.",
)
@click.option(
    "--to", "end", metavar="DATE", help="Backfill: up to this date (included) or ISO time; default now."
)
@click.option(
    "--chunk",
    metavar="DURATION",
    help="Backfill: cut the window into chunks (1d, 6h), each committed on its own; run the same"
    " command again to resume at the first unfinished chunk.",
)
@flag("--yes", help="Do not ask before a --full-refresh replaces a table.")
@click.option("--run-id", hidden=True, help="The run id the tick noted for this scheduled run.")
@project_option
@json_option
@run_command(_human)
def command(
    assets: tuple[str, ...],
    only: bool,
    due: bool,
    wait: bool,
    full_refresh: bool,
    start: str | None,
    end: str | None,
    chunk: str | None,
    yes: bool,
    run_id: str | None,
    project_dir: str | None,
) -> Result:
    """Run every ingest and the stale transforms, or the named ASSETS and the stale transforms downstream.

    A run started by a person approves the code it ran for the scheduler. `--full-refresh` reloads an
    ingest whole; `--from` [`--to`] [`--chunk`] backfills a range of it (`croft docs backfill`).
    """
    flags = (full_refresh, start, end, chunk)
    return work(assets, only, due, run_id, project_dir, wait, flags, yes)


def _due(
    assets: tuple[str, ...],
    only: bool,
    due: bool,
    run_id: str | None,
    project_dir: str | None,
) -> Result:
    if not due or only:
        raise CroftError(
            "USAGE",
            "--run-id goes with --due only"
            if not due
            else "--due runs what the scheduler would; it does not go with --only or --wait",
            "croft run --due ASSET... runs the named assets as the scheduler does",
        )
    return due_run(project_dir, list(assets), run_id, command_line())
