"""``croft metrics``: every registered project's state as Prometheus text on stdout."""

from __future__ import annotations

import sys

import click

from croft.cli.render import emit, json_option, problem_lines, respond
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.scheduler.control.metrics import gather


def _human(result: Result) -> str:
    return str(result.data["text"]).rstrip("\n")


@click.command("metrics")
@json_option
def command(as_json: bool) -> None:
    """Print Prometheus text for every registered project: last success, failures in a row, data age and
    promise, run durations, the queue and the last tick; the numbers `croft status --json` shows. For
    node_exporter's textfile collector; `croft serve --metrics HOST:PORT` serves the same at /metrics."""

    if as_json:
        respond(True, None, gather)
    try:
        result = gather()
    except CroftError as exc:
        result = Result(problems=[exc.problem, *exc.extra])
    if result.is_ok and result.problems:  # stdout stays pure Prometheus text; a warning goes to stderr
        sys.stderr.write("\n".join(problem_lines(result.problems)) + "\n")
        result.problems = []
    emit(result, False, _human)
