"""``croft docs [TOPIC]``: the guides in docs/, printed from the copy shipped with croft."""

from __future__ import annotations

import click

from croft.cli.render import json_option, run_command
from croft.core.paths import data_path
from croft.core.problems import CroftError
from croft.core.result import Result
from croft.core.suggest import nearest


def _topics() -> list[str]:
    folder = data_path("docs")
    return sorted(p.stem for p in folder.glob("*.md")) if folder.is_dir() else []


def _human(result: Result) -> str:
    if "text" in result.data:
        return result.data["text"].rstrip()
    return "topics:\n" + "\n".join(f"  croft docs {t}" for t in result.data["topics"])


@click.command("docs")
@click.argument("topic", required=False)
@json_option
@run_command(_human)
def command(topic: str | None) -> Result:
    """Print a guide such as `croft docs scheduling`, or list the topics."""
    topics = _topics()
    if not topic:
        return Result(data={"topics": topics})
    name = topic.lower().replace(" ", "-")
    if name not in topics:
        close = nearest(name, topics)
        raise CroftError(
            "USAGE",
            f"there is no guide called {topic!r}",
            f"Did you mean `croft docs {close}`?" if close else "`croft docs` lists the topics.",
            suggestion=close,
        )
    return Result(data={"topic": name, "text": data_path("docs", f"{name}.md").read_text(encoding="utf-8")})
