"""``croft docs [TOPIC | CODE]``: the guides in docs/ and one page per problem code, printed from the copy
shipped with croft, so a user gets from any error to its fix without leaving the terminal."""

from __future__ import annotations

import difflib
from pathlib import Path

import click

from croft.cli.render import json_option, run_command
from croft.core.paths import data_path
from croft.core.problems import CroftError
from croft.core.result import Result

__all__ = ["ALIASES", "command", "error_pages", "page_summary", "resolve", "topics"]

# The words a user would guess -> the guide that covers them. Every target must be a page in docs/
# (a test checks), and no alias may shadow a page's own name.
ALIASES: dict[str, str] = {
    # getting started
    "start": "getting-started",
    "quickstart": "getting-started",
    "quick-start": "getting-started",
    "tutorial": "getting-started",
    "intro": "getting-started",
    "init": "getting-started",
    "first": "getting-started",
    # assets
    "asset": "assets",
    "ingest": "assets",
    "ingests": "assets",
    "transform": "assets",
    "transforms": "assets",
    "sql": "assets",
    "python": "assets",
    "checks": "assets",
    "check": "assets",
    "cursor": "assets",
    "incremental": "assets",
    "http": "assets",
    "secrets": "assets",
    # running and history
    "run": "running",
    "runs": "running",
    "history": "running",
    "logs": "running",
    "log": "running",
    "status": "running",
    "preview": "running",
    "watch": "running",
    "stale": "running",
    "fresh": "running",
    "approve": "running",
    "approval": "running",
    # loading an ingest again
    "full-refresh": "backfill",
    "refresh": "backfill",
    "reload": "backfill",
    "resume": "backfill",
    "window": "backfill",
    # the schedule language and the scheduler's rules
    "schedule": "scheduling",
    "schedules": "scheduling",
    "cron": "scheduling",
    "dst": "scheduling",
    "daylight-saving": "scheduling",
    "timezone": "scheduling",
    "holds": "scheduling",
    "hold": "scheduling",
    "held": "scheduling",
    "retries": "scheduling",
    "retry": "scheduling",
    "backoff": "scheduling",
    "missed": "scheduling",
    "missed-fires": "scheduling",
    "explain": "scheduling",
    "jitter": "scheduling",
    "quiet": "scheduling",
    "quiet-hours": "scheduling",
    "pause": "scheduling",
    "simulate": "scheduling",
    "flight-plan": "scheduling",
    # the OS job on each platform
    "crontab": "scheduler",
    "launchd": "scheduler",
    "launchctl": "scheduler",
    "systemd": "scheduler",
    "macos": "scheduler",
    "linux": "scheduler",
    "tick": "scheduler",
    "doctor": "scheduler",
    "uninstall": "scheduler",
    "remove": "scheduler",
    "job": "scheduler",
    "permissions": "scheduler",
    "security": "scheduler",
    "umask": "scheduler",
    # running on a server
    "serve": "server",
    "servers": "server",
    "docker": "server",
    "container": "server",
    "dockerfile": "server",
    "kubernetes": "server",
    "k8s": "server",
    "cronjob": "server",
    "linger": "server",
    "lingering": "server",
    "wsl": "server",
    # notifications
    "notify": "notifications",
    "notification": "notifications",
    "webhook": "notifications",
    "webhooks": "notifications",
    "desktop": "notifications",
    "ping": "notifications",
    "signature": "notifications",
    "hmac": "notifications",
    "alerts": "notifications",
    # configuration and the environment
    "config": "configuration",
    "croft.json": "configuration",
    "settings": "configuration",
    "dotenv": "configuration",
    ".env": "configuration",
    "env": "environment",
    "variables": "environment",
    "croft_now": "environment",
    # the status page
    "page": "ui",
    "web": "ui",
    "browser": "ui",
    "dashboard": "ui",
    # coding agents
    "agent": "agents",
    "mcp": "agents",
    "context": "agents",
    "skill": "agents",
    "claude": "agents",
    "claude-code": "agents",
    "codex": "agents",
    "agents.md": "agents",
    # the rest
    "error": "errors",
    "codes": "errors",
    "problems": "errors",
    "exit-codes": "errors",
    "command": "commands",
    "cli": "commands",
    "json": "commands",
    "decisions": "design",
    "rooms": "architecture",
    "layout": "architecture",
    "contributing": "architecture",
    "bench": "benchmarks",
    "pool": "pools",
    "rate-limit": "pools",
    "performance": "benchmarks",
    "speed": "benchmarks",
}


def topics() -> dict[str, Path]:
    """Guide name -> its file: every ``docs/*.md``."""
    folder = data_path("docs")
    return {p.stem: p for p in sorted(folder.glob("*.md"))} if folder.is_dir() else {}


def error_pages() -> dict[str, Path]:
    """Problem code -> its page: every ``docs/errors/CODE.md``."""
    folder = data_path("docs", "errors")
    return {p.stem: p for p in sorted(folder.glob("*.md"))} if folder.is_dir() else {}


def page_summary(text: str) -> str:
    """A page's one line for the listing: its title, then the first sentence of its first paragraph."""
    lines = text.splitlines()
    title = next((ln[2:].strip() for ln in lines if ln.startswith("# ")), "")
    para: list[str] = []
    for ln in lines:
        if ln.startswith(("#", "```", "|", "-", ">")) or not ln.strip():
            if para:
                break
            continue
        para.append(ln.strip())
    first = " ".join(para)
    end = first.find(". ")
    sentence = first if end < 0 else first[: end + 1]
    return f"{title}: {sentence}" if sentence else title


def resolve(word: str) -> tuple[str, Path] | None:
    """The page a word opens: a guide by name, a problem code (any case), or an alias; None when none."""
    guides, codes = topics(), error_pages()
    name = word.strip().lower().replace(" ", "-").replace("_", "-")
    if name in guides:
        return name, guides[name]
    code = word.strip().upper().replace("-", "_").replace(" ", "_")
    if code in codes:
        return code, codes[code]
    target = ALIASES.get(name) or ALIASES.get(word.strip().lower())
    if target and target in guides:
        return target, guides[target]
    return None


def _closest(word: str, choices: list[str]) -> list[str]:
    """Up to three near names; difflib is loaded here, on the error path only."""

    return difflib.get_close_matches(word, choices, n=3, cutoff=0.6)


def _unknown(word: str) -> CroftError:
    guides, codes = topics(), error_pages()
    lowered = word.strip().lower()
    near: list[str] = []
    by_topic = _closest(lowered, [*guides, *ALIASES])
    by_code = _closest(word.strip().upper().replace("-", "_"), list(codes))
    looks_like_code = "_" in word or word.strip().isupper()
    for found in by_code + by_topic if looks_like_code else by_topic + by_code:
        target = ALIASES.get(found, found)
        if target not in near:
            near.append(target)
    near = near[:3]
    hint = (
        "did you mean " + ", ".join(f"`croft docs {n}`" for n in near) + "? `croft docs` lists every topic"
        if near
        else "`croft docs` lists every topic; a problem code such as SCHEDULE_HELD opens its own page"
    )
    return CroftError(
        "USAGE",
        f"there is no guide or problem code called {word!r}",
        hint,
        suggestion=near[0] if near else None,
        details={"nearest": near},
    )


def _human(result: Result) -> str:
    if not result.is_ok:
        return ""
    if "text" in result.data:
        return str(result.data["text"]).rstrip()
    width = max((len(t["topic"]) for t in result.data.get("topics", [])), default=0)
    rows = [f"  {t['topic']:<{width}}  {t['summary']}" for t in result.data.get("topics", [])]
    codes = result.data.get("codes", [])
    return "\n".join(
        [
            "croft docs TOPIC prints a guide:",
            *rows,
            "",
            f"croft docs CODE prints what a problem code means and how to fix it ({len(codes)} codes,"
            " e.g. croft docs SCHEDULE_HELD); croft docs errors lists them.",
        ]
    )


@click.command("docs")
@click.argument("topic", nargs=-1)
@json_option
@run_command(_human)
def command(topic: tuple[str, ...]) -> Result:
    """Print a guide (`croft docs scheduling`, `croft docs webhook`) or a problem code's page
    (`croft docs SCHEDULE_HELD`); with no topic, list them."""
    if not topic:
        listing = [
            {"topic": name, "summary": page_summary(path.read_text(encoding="utf-8"))}
            for name, path in topics().items()
        ]
        return Result(data={"topics": listing, "codes": sorted(error_pages()), "aliases": dict(ALIASES)})
    word = " ".join(topic)
    found = resolve(word)
    if found is None:
        raise _unknown(word)
    name, path = found
    return Result(data={"topic": name, "text": path.read_text(encoding="utf-8")})
