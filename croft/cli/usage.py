"""click's own usage errors (an unknown option, a bad value, a missing folder) as ``USAGE`` problems."""

from __future__ import annotations

from collections.abc import Sequence

import click

from croft.core.problems import CroftError

__all__ = ["usage_error"]


def usage_error(exc: click.ClickException, args: Sequence[str]) -> CroftError:
    """The USAGE error for what click refused, with a hint naming the command's own ``--help``."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None and ctx.command_path else "croft"
    details: dict[str, object] = {"argv": list(args)}
    param = getattr(exc, "param", None)
    if param is not None and getattr(param, "name", None):
        details["param"] = param.name
    return CroftError(
        "USAGE",
        exc.format_message(),
        f"`{path} --help` shows the arguments and options it takes.",
        details=details,
    )
