"""``croft tick [--json] [--project DIR]``: the project tick, dispatched without click.

It runs every minute for every scheduled project, so ``croft.cli.main`` hands it ``argv`` before building
the click group and this module parses its two flags itself. ``command`` (the click command, for
``croft --help`` and ``croft tick --help``) is built only when click asks for it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["run"]

USAGE = "usage: croft tick [--json] [--project DIR] [--log-as NAME]"
HELP = f"""{USAGE}

  Run the project's tick once: if scheduling is on, start one detached `croft run --due` per group of
  due assets and list the held ones. The per-user OS job (or `croft serve`) runs it every minute; you
  rarely need to run it yourself.

options:
  --json           print one JSON envelope on stdout
  --project DIR    the project folder (default: the one containing the current folder)
  --log-as NAME    write every line printed as a tick log line naming NAME (how a tick started for a
                   freed slot of the per-user cap runs, its output going to the tick log)
  -h, --help       show this message
"""

_EXITED = {
    "off": "scheduling is off for this project",
    "paused": "scheduling is paused for this project",
    "busy": "another tick of this project is running",
}


def _parse(args: list[str]) -> tuple[bool, str | None, str | None]:
    """(--json, --project DIR, --log-as NAME)."""
    as_json, project, name = False, None, None
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--json":
            as_json = True
        elif word in ("--project", "--log-as") and rest:
            value = rest.pop(0)
            project, name = (value, name) if word == "--project" else (project, value)
        elif word.startswith("--project="):
            project = word.split("=", 1)[1]
        elif word.startswith("--log-as="):
            name = word.split("=", 1)[1]
        else:
            from croft.core.problems import CroftError

            raise CroftError("USAGE", f"croft tick does not take {word!r}", USAGE)
    return as_json, project, name


def human(data: dict[str, Any]) -> str:
    if data.get("exited"):
        return f"tick: nothing to do: {_EXITED.get(data['exited'], data['exited'])}"
    started = [f"started {s['runId']} ({', '.join(s['assets'])})" for s in data["spawned"]]
    lines = [f"tick: {'; '.join(started) or 'nothing due'} ({data['tookMs']} ms)"]
    lines += [f"  held {h['asset']} ({h['code']}): {h['message'].split(': ', 1)[-1]}" for h in data["held"]]
    return "\n".join(lines)


def _idle(args: list[str]) -> dict[str, Any] | None:
    """The idle tick (croft.scheduler.tick.memo) when it can answer; None means: run the full tick."""
    import os
    import time

    started = time.perf_counter()
    try:
        _, project_dir, _ = _parse(args)
        from croft.core import knobs
        from croft.core.clock import now, to_iso

        if knobs.problems():
            return None
        moment = to_iso(now())
    except Exception:  # a usage error or a bad knob (CROFT_NOW...): the full path reports it properly
        return None
    from croft.scheduler.tick.memo import idle_tick

    data = idle_tick(project_dir or os.getcwd(), moment)
    if data is not None:
        data["tookMs"] = int((time.perf_counter() - started) * 1000)
    return data


def _log_as(args: list[str]) -> None:
    """``--log-as NAME``: from here on, what this tick prints (stdout and stderr are the tick log, a
    traceback included) is written as tick log lines naming its project (``scheduler.ticklog``)."""
    try:
        name = _parse(args)[2]
    except Exception:  # a usage error: told below, in the lines it would name
        name = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "--log-as"), None)
    if not name:
        return
    from croft.core.clock import now, to_iso
    from croft.scheduler.ticklog import NamedLines

    sys.stdout.flush()
    sys.stdout = sys.stderr = NamedLines(sys.stdout.fileno(), name, lambda: to_iso(now()))


def _said(data: dict[str, Any], problems: list[Any]) -> list[str]:
    """What one project tick of ``croft tick --batch`` (``scheduler.tick.batch``) says in the tick log."""
    lines = [human(data)] if data else []
    if problems:
        from croft.cli.boundary import problem_lines

        lines += problem_lines(problems)
    return lines


def run(args: list[str]) -> int:
    """Parse, tick, print; returns the exit code. Never raises a CroftError to the caller."""
    if "-h" in args or "--help" in args:
        print(HELP)
        return 0
    if args == ["--batch"]:  # the worker croft tick --all hands its full ticks to
        from croft.scheduler.tick.batch import work

        return work(_said)
    as_json = "--json" in args
    _log_as(args)
    quick = _idle(args)
    if quick is not None:
        if as_json:
            from croft.core.envelope import dumps, envelope

            print(dumps(envelope(True, quick)))
        else:
            from croft.core.text import for_terminal

            print(for_terminal(human(quick)))
        return 0
    from croft.core import clock
    from croft.core.envelope import dumps
    from croft.core.problems import CroftError
    from croft.core.result import Result

    try:
        as_json, project_dir, name = _parse(args)
        from pathlib import Path

        from croft.core import knobs

        knobs.require_all()  # the tick hands every knob on to the runs it starts: a bad one stops it here
        from croft.project.config import load_project
        from croft.scheduler.tick.project_tick import project_tick

        try:
            project = load_project(Path(project_dir) if project_dir else None)
        except CroftError as exc:  # a croft.json that no longer loads stops a project that is on: say so
            from croft.scheduler.tick.failure import tick_failed_to_load

            tick_failed_to_load(Path(project_dir) if project_dir else None, exc, clock.now())
            raise
        data, problems = project_tick(project, clock.now(), log_name=name)
        result = Result(data=data, problems=problems, ok=True)
    except CroftError as exc:
        result = Result(problems=[exc.problem, *exc.extra])
    if as_json:
        print(dumps(result.envelope()))
    else:
        if result.data:
            from croft.core.text import for_terminal

            print(for_terminal(human(result.data)))
        if result.problems:
            from croft.cli.boundary import problem_lines

            print("\n".join(problem_lines(result.problems)), file=sys.stderr)
    return result.exit_code


def __getattr__(name: str) -> Any:
    if name != "command":
        raise AttributeError(name)
    import click

    @click.command(
        "tick",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    @click.pass_context
    def command(ctx: click.Context) -> None:
        """Run the project's tick once (the OS job runs it every minute)."""
        sys.exit(run(list(ctx.args)))

    return command
