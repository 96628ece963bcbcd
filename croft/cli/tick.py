"""``croft tick [--json] [--project DIR]``: the project tick, dispatched without click.

It runs every minute for every scheduled project, so ``croft.cli.main`` hands it ``argv`` before building
the click group and this module parses its two flags itself. ``command`` (the click command, for
``croft --help`` and ``croft tick --help``) is built only when click asks for it.
"""

from __future__ import annotations

import sys

from croft.scheduler.tick.report import tick_text

TYPE_CHECKING = False  # nothing of typing (or pathlib) is loaded on the idle path
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
  --log-as NAME    write every line printed as a tick log line naming NAME (how the per-user tick and
                   croft serve start it, its output going to the tick log)
  -h, --help       show this message
"""


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


def batch() -> int:
    """``croft tick --batch`` (hidden): the worker ``croft tick --all`` hands full ticks to. One project
    folder per line on stdin, one JSON answer per line on stdout; what each tick would print goes to
    stderr, which is the per-user tick log, as lines naming the project as ``croft tick --all`` does
    (``ticklog.project_names`` over the registry, read once; ``ticklog.NamedLines``); the worker's own
    words (a traceback) name it. Ends at the end of its input."""
    import json
    import os

    from croft.core.clock import now, to_iso
    from croft.scheduler.tick.batch import tick_one
    from croft.scheduler.ticklog import NamedLines, project_names
    from croft.scheduler.user.registry import Registry

    def stamp() -> str:
        return to_iso(now())

    sys.stderr.flush()
    err = sys.stderr.fileno()
    sys.stderr = NamedLines(err, f"croft tick --batch (pid {os.getpid()})", stamp)
    try:
        names = project_names(e.root for e in Registry().entries())
    except Exception:  # a registry that cannot be read now: each project by its whole path
        names = {}
    for line in sys.stdin:
        root = line.rstrip("\n")
        if not root:
            continue
        name = names.get(root, root)
        data, problems, answer = tick_one(root, name)
        said = [tick_text(data)] if data else []
        if problems:
            from croft.cli.boundary import problem_lines

            said += problem_lines(problems)
        if said:
            NamedLines(err, name, stamp).write("\n".join(said) + "\n")
        try:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        except OSError:  # croft tick --all stopped waiting: finish the input it gave, quietly
            pass
    return 0


def run(args: list[str]) -> int:
    """Parse, tick, print; returns the exit code. Never raises a CroftError to the caller."""
    if "-h" in args or "--help" in args:
        print(HELP)
        return 0
    if args == ["--batch"]:
        return batch()
    as_json = "--json" in args
    _log_as(args)
    quick = _idle(args)
    if quick is not None:
        if as_json:
            from croft.core.envelope import dumps, envelope

            print(dumps(envelope(True, quick)))
        else:
            from croft.core.text import for_terminal

            print(for_terminal(tick_text(quick)))
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

            print(for_terminal(tick_text(result.data)))
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
