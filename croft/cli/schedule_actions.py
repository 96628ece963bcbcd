"""``croft schedule on|off|pause|resume``: change the setting, the registry and the OS job."""

from __future__ import annotations

import click

from croft.cli.project_option import load
from croft.cli.schedule_options import progress, project_action, state_human, ticking_options
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.scheduler.control.assetpause import pause_asset, pause_words, resume_asset
from croft.scheduler.control.commands import schedule_off, schedule_on, schedule_pause

__all__ = ["off", "on", "pause", "resume"]


@click.command("on")
@ticking_options
@project_action(state_human)
def on(no_os_job: bool, backend: str, project_dir: str | None) -> Result:
    """Let the scheduler run this project's ingests: records the setting, registers the project, installs
    the per-user job and waits for its first tick (CROFT_HEARTBEAT_WAIT_MS, default 70 s)."""

    return schedule_on(
        load(project_dir),
        no_os_job=no_os_job,
        backend_name=backend,
        progress=progress(),  # type: ignore[arg-type]
    )


@click.command("off")
@project_action(state_human)
def off(project_dir: str | None) -> Result:
    """Stop scheduling this project; the OS job goes once no project needs it."""

    return schedule_off(load(project_dir))


def _pause_human(result: Result) -> str:
    if "asset" in result.data:
        return pause_words(result.data)
    return state_human(result)


@click.command("pause")
@click.argument("asset", required=False)
@click.option("--for", "length", help="How long: 90m, 1h30m, 2 days... (default: until resumed).")
@project_action(_pause_human)
def pause(asset: str | None, length: str | None, project_dir: str | None) -> Result:
    """Start nothing until the pause ends or `croft schedule on`; with ASSET, pause only that asset
    (`croft schedule resume ASSET` ends it) while the rest of the project runs."""
    if asset is not None:
        return pause_asset(load(project_dir), asset, length)

    return schedule_pause(load(project_dir), length)


@click.command("resume")
@click.argument("asset", required=False)
@ticking_options
@project_action(_pause_human)
def resume(asset: str | None, no_os_job: bool, backend: str, project_dir: str | None) -> Result:
    """Let the scheduler run ASSET again after `croft schedule pause ASSET`; without ASSET, the same as
    `croft schedule on`."""
    if asset is not None:
        if no_os_job or backend != "auto":
            raise CroftError(
                "USAGE",
                f"--no-os-job and --backend say how the project is ticked, not {asset}",
                f"croft schedule resume {asset} resumes the asset; croft schedule on --no-os-job the project",
            )
        return resume_asset(load(project_dir), asset)
    return schedule_on(load(project_dir), no_os_job=no_os_job, backend_name=backend, progress=progress())  # type: ignore[arg-type]
