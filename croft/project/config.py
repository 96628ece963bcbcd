"""Finding a project's root and reading ``croft.json`` into a validated, immutable Config.

Every refusal is ``CONFIG_INVALID`` naming the file and the key, with a hint and, where croft can guess the
intended value (a misspelt key or zone), a ``suggestion``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfoNotFoundError

from croft.core.duration import parse_seconds
from croft.core.paths import require_utf8_path
from croft.core.paths import state_dir as _state_dir
from croft.core.problems import CroftError, Problem, problem
from croft.core.redact import Redactor
from croft.core.suggest import nearest
from croft.core.text import clip, quoted
from croft.core.zones import closest_zone, zone_named
from croft.project.bounds import (
    bound_problem,
    pool_problem,
    pool_size_problem,
    remind_problem,
    remind_seconds,
    url_or_env_problem,
)
from croft.project.env import read_dotenv, shell_wins
from croft.schedule.quiet import window_problem

if TYPE_CHECKING:
    from typing import Any


__all__ = [
    "CONFIG_FILE",
    "DEFAULT_DATABASE",
    "Config",
    "Project",
    "check_timezone",
    "find_root",
    "load_config",
    "load_project",
]

CONFIG_FILE = "croft.json"
DEFAULT_DATABASE = "warehouse.sqlite"
TOP_KEYS = (
    "$schema",
    "database",
    "notify",
    "stateDir",
    "timezone",
    "history",
    "maxRuntime",
    "jitter",
    "quiet",
    "pools",
)
HISTORY_KEYS = ("keepDays",)
DEFAULT_KEEP_DAYS = 90  # how long runs, steps and step logs are kept (the latest of each asset always is)
NOTIFY_KEYS = ("after", "desktop", "ping", "remind", "runPing", "secret", "urls", "webhook")
DEFAULT_REMIND = "1 day"
EXAMPLE = '{"timezone": "Europe/London"}'


@dataclass(frozen=True)
class Config:
    """croft.json after validation; paths are absolute, defaults filled in, ``raw`` is the file as parsed."""

    timezone: str
    database: Path
    state_dir: Path
    notify_desktop: bool = True
    notify_webhook: str | None = None
    notify_ping: str | None = None
    notify_secret: str | None = None
    notify_after: int = 1  # tell at the Nth scheduled failure in a row
    notify_remind_s: float = 86_400.0  # between reminders of a failing streak; bounds.REMIND_NEVER: never
    notify_run_ping: str | None = None  # healthchecks.io-style run pings: a URL or the name of a .env key
    notify_urls: tuple[str, ...] = ()  # Apprise URLs; "$NAME" names a .env key
    history_keep_days: int = DEFAULT_KEEP_DAYS
    max_runtime_s: float | None = None  # the project's default ceiling of a scheduled run (None: 2 h)
    jitter_s: float | None = None  # every ingest's fire delay unless it sets its own (schedule.jitter)
    quiet: tuple[str, ...] = ()  # quiet hours in the project's zone, unless an ingest sets its own
    pools: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # pool -> runs at once
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __repr__(self) -> str:  # croft.json as parsed stays out of a repr, as it did (a webhook URL in it)
        shown = ", ".join(f"{name}={value!r}" for name, value in vars(self).items() if name != "raw")
        return f"Config({shown})"


@dataclass(frozen=True, eq=False)
class Project:
    """A loaded project. ``env`` and ``redactor`` read ``.env`` on first use, so a tick that needs no secret
    never opens it."""

    root: Path
    config: Config

    @cached_property
    def dotenv(self) -> dict[str, str]:
        """The pairs written in ``<root>/.env`` (not the shell's)."""

        return read_dotenv(self.root / ".env")

    @cached_property
    def env(self) -> dict[str, str]:
        """The names ``.env`` defines, with the shell's value winning over the file's; ENV_INVALID naming
        a key whose value is larger than a secret may be (``env.shell_wins``)."""

        return shell_wins(self.dotenv, self.root / ".env")

    @cached_property
    def redactor(self) -> Redactor:
        """Hides the values of the names ``.env`` defines, as code sees them (shell wins); nothing else."""

        return Redactor(self.env)

    @property
    def assets_dir(self) -> Path:
        return self.root / "assets"


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) holding ``croft.json``."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder
    raise CroftError(
        "NOT_A_PROJECT",
        f"{here} is not inside a croft project (no {CONFIG_FILE} here or in any parent folder)",
        "run `croft init` to make this folder a project, or cd into one",
        fix={"command": "croft init"},
    )


def load_project(start: Path | None = None) -> Project:
    root = find_root(start)
    require_utf8_path(root)
    return Project(root=root, config=load_config(root))


def load_config(root: Path) -> Config:
    """Read and validate ``<root>/croft.json``; raises CONFIG_INVALID with every problem."""
    path = Path(root) / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CroftError(
            "NOT_A_PROJECT",
            f"{root} has no {CONFIG_FILE}",
            "run `croft init` to make this folder a project",
            fix={"command": "croft init"},
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise CroftError(
            _bad(path, None, f"{CONFIG_FILE} cannot be read as UTF-8 text ({_why(err)})", _SAVE_AS)
        ) from None
    try:
        raw = json.loads(text)
    except RecursionError:
        raise CroftError(
            _bad(path, None, f"{CONFIG_FILE} is nested too deeply to read", f"a complete config is {EXAMPLE}")
        ) from None
    except json.JSONDecodeError as err:
        raise CroftError(
            _bad(
                path,
                None,
                f"{CONFIG_FILE} is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})",
                "croft.json is plain JSON: double-quoted keys and strings, no comments, no trailing commas",
                line=err.lineno,
            )
        ) from None
    problems = validate(raw, path)
    if problems:
        error = CroftError(problems[0])
        error.extra = problems[1:]
        raise error
    root = Path(root)
    notify = raw.get("notify") or {}
    database = Path(raw.get("database") or DEFAULT_DATABASE).expanduser()
    return Config(
        timezone=raw["timezone"],
        database=database if database.is_absolute() else root / database,
        state_dir=_state_dir(root, raw.get("stateDir")),
        notify_desktop=notify.get("desktop", True),
        notify_webhook=notify.get("webhook"),
        notify_ping=notify.get("ping"),
        notify_secret=notify.get("secret"),
        notify_after=notify.get("after", 1),
        notify_remind_s=_remind(notify.get("remind", DEFAULT_REMIND)),
        notify_run_ping=notify.get("runPing"),
        notify_urls=tuple(notify.get("urls") or ()),
        history_keep_days=(raw.get("history") or {}).get("keepDays", DEFAULT_KEEP_DAYS),
        max_runtime_s=_max_runtime(raw.get("maxRuntime")),
        jitter_s=_jitter(raw.get("jitter")),
        quiet=_quiet(raw.get("quiet")),
        pools=MappingProxyType(dict(raw.get("pools") or {})),
        raw=raw,
    )


def validate(raw: Any, path: Path) -> list[Problem]:
    """Every problem with parsed croft.json content, in file order of importance (shape, keys, values)."""
    if not isinstance(raw, dict):
        return [_bad(path, None, f"{CONFIG_FILE} must hold a JSON object", f"a complete config is {EXAMPLE}")]
    problems = [_unknown(path, key, TOP_KEYS) for key in raw if key not in TOP_KEYS]
    if "timezone" not in raw:
        problems.append(
            _bad(
                path,
                "timezone",
                f'{CONFIG_FILE} has no "timezone"; schedules and dates need one',
                f"add the IANA zone the schedules are meant in, e.g. {EXAMPLE}",
            )
        )
    else:
        zone_problem = check_timezone(raw["timezone"])
        if zone_problem:
            message, hint, suggestion = zone_problem
            problems.append(_bad(path, "timezone", message, hint, suggestion=suggestion))
    if "database" in raw and (not isinstance(raw["database"], str) or not raw["database"].strip()):
        problems.append(
            _bad(path, "database", '"database" must be a file name', f'the default is "{DEFAULT_DATABASE}"')
        )
    if "stateDir" in raw and (not isinstance(raw["stateDir"], str) or not raw["stateDir"].strip()):
        problems.append(_bad(path, "stateDir", '"stateDir" must be a folder path', 'the default is ".croft"'))
    problems.extend(_notify_problems(raw.get("notify"), path))
    problems.extend(_history_problems(raw.get("history"), path))
    problems.extend(_pools_problems(raw.get("pools"), path))
    if "maxRuntime" in raw:
        why = bound_problem("maxRuntime", raw["maxRuntime"], as_json=True)
        if why:
            problems.append(
                _bad(
                    path,
                    "maxRuntime",
                    f'"maxRuntime" {why}',
                    'e.g. "maxRuntime": "30m" (the default is "2h")',
                )
            )
    problems.extend(_release_problems(raw, path))
    return problems


def _release_problems(raw: dict[str, Any], path: Path) -> list[Problem]:
    """``jitter`` and ``quiet``: the project's defaults for when a fire is let go (docs/scheduling.md)."""
    out = []
    if "jitter" in raw:
        why = bound_problem("jitter", raw["jitter"], as_json=True)
        if why:
            out.append(
                _bad(path, "jitter", f'"jitter" {why}', 'e.g. "jitter": "5m" (each fire waits 0 to 5 min)')
            )
    if "quiet" in raw:
        why = window_problem(raw["quiet"])
        if why:
            out.append(_bad(path, "quiet", f'"quiet" {why}', 'e.g. "quiet": ["22:00-06:00"] (in "timezone")'))
    return out


def _history_problems(history: Any, path: Path) -> list[Problem]:
    if history is None:
        return []
    example = f'{{"keepDays": {DEFAULT_KEEP_DAYS}}}'
    if not isinstance(history, dict):
        return [_bad(path, "history", '"history" must be an object', f"for example {example}")]
    problems = [
        _unknown(path, f"history.{key}", [f"history.{k}" for k in HISTORY_KEYS])
        for key in history
        if key not in HISTORY_KEYS
    ]

    why = bound_problem("history.keepDays", history.get("keepDays", DEFAULT_KEEP_DAYS), as_json=True)
    if why:
        problems.append(
            _bad(
                path,
                "history.keepDays",
                f'"history.keepDays" (days) {why}',
                f"the default is {DEFAULT_KEEP_DAYS}; the latest run of each asset is kept whatever its age",
            )
        )
    return problems


def _pools_problems(pools: Any, path: Path) -> list[Problem]:
    """``"pools": {"stripe": 1}``: each a pool name (``bounds.pool_problem``) and how many of its scheduled
    runs may go at once for this user (``bounds.pool_size_problem``)."""
    if pools is None:
        return []
    example = '"pools": {"stripe": 1}'
    if not isinstance(pools, dict):
        return [_bad(path, "pools", '"pools" must be an object of pool names and sizes', f"e.g. {example}")]
    problems = []
    for name, size in pools.items():
        why = pool_problem(name) or pool_size_problem(size)
        if why:
            key = f"pools.{clip(str(name), 40)}"
            problems.append(_bad(path, key, f'"{key}": {why}', f"e.g. {example}"))
    return problems


def _remind(value: Any) -> float:

    return remind_seconds(value)


def _jitter(value: Any) -> float | None:
    return parse_seconds(value, bare_text=False) if value is not None else None


def _quiet(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _max_runtime(value: Any) -> float | None:

    return parse_seconds(value) if value is not None else None


def check_timezone(value: Any) -> tuple[str, str, str | None] | None:
    """None for a real IANA zone, else (message, hint, suggestion). The zone list is only read on failure."""

    hint = 'use a name from the tz database, such as "Europe/London" or "America/New_York"'
    if not isinstance(value, str) or not value.strip():
        return (f'"timezone" must be an IANA zone name, not {clip(json.dumps(value))}', hint, None)
    try:
        zone_named(value)
        return None
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    suggestion = closest_zone(value)
    if suggestion:
        hint = f'did you mean "{suggestion}"?'
    return (f'"timezone" is {quoted(value)}, which is not an IANA time zone', hint, suggestion)


def _notify_problems(notify: Any, path: Path) -> list[Problem]:
    if notify is None:
        return []
    if not isinstance(notify, dict):
        return [_bad(path, "notify", '"notify" must be an object', '{"desktop": true, "webhook": null}')]
    problems = [
        _unknown(path, f"notify.{key}", [f"notify.{k}" for k in NOTIFY_KEYS])
        for key in notify
        if key not in NOTIFY_KEYS
    ]
    if "desktop" in notify and not isinstance(notify["desktop"], bool):
        problems.append(
            _bad(path, "notify.desktop", '"notify.desktop" must be true or false', "the default is true")
        )
    for key in ("webhook", "ping"):
        value = notify.get(key)
        if value is not None and not (isinstance(value, str) and value.startswith(("http://", "https://"))):
            problems.append(
                _bad(
                    path,
                    f"notify.{key}",
                    f'"notify.{key}" must be an http(s) URL or null',
                    f'for example "https://example.com/croft-{key}"',
                )
            )
    problems.extend(_alert_problems(notify, path))
    secret = notify.get("secret")
    if secret is not None and (not isinstance(secret, str) or not secret):
        problems.append(
            _bad(
                path,
                "notify.secret",
                '"notify.secret" must be a string or null',
                "it signs webhook payloads (HMAC-SHA256)",
            )
        )
    return problems


def _alert_problems(notify: dict[str, Any], path: Path) -> list[Problem]:
    """notify.after, notify.remind, notify.runPing and notify.urls, by the rules the assets' own
    options use (``project.rules``)."""

    found: list[Problem] = []
    checks = (
        ("after", lambda v: bound_problem("notify.after", v, as_json=True), '"after": 3 (the default is 1)'),
        (
            "remind",
            lambda v: remind_problem(v, as_json=True),
            '"remind": "2h" or "never" (the default is "1 day")',
        ),
        ("runPing", url_or_env_problem, '"runPing": "https://hc-ping.com/<uuid>" or the name of a .env key'),
    )
    for key, why_of, example in checks:
        if key in notify and notify[key] is not None:
            why = why_of(notify[key])
            if why:
                found.append(_bad(path, f"notify.{key}", f'"notify.{key}" {why}', f"for example {example}"))
    urls = notify.get("urls")
    if urls is not None and not (
        isinstance(urls, list) and all(isinstance(u, str) and ("://" in u or u.startswith("$")) for u in urls)
    ):
        found.append(
            _bad(
                path,
                "notify.urls",
                '"notify.urls" must be a list of Apprise URLs (or "$NAME" for a .env key holding one)',
                'for example "urls": ["ntfy://ntfy.sh/my-topic", "$SLACK_URL"]',
            )
        )
    return found


def _unknown(path: Path, key: str, known: tuple[str, ...] | list[str]) -> Problem:

    by_fold = {k.casefold().replace("_", ""): k for k in known}
    folded = key.casefold().replace("_", "")
    guess = by_fold.get(folded)
    if guess is None:
        close = nearest(folded, by_fold)
        guess = by_fold[close] if close else None
    listed = ", ".join(k for k in sorted(known) if k != "$schema")
    hint = (f'did you mean "{guess}"? ' if guess else "") + f"known keys: {listed}"
    return _bad(path, key, f"{CONFIG_FILE} has an unknown key {quoted(key)}", hint, suggestion=guess)


_SAVE_AS = "save croft.json as a readable UTF-8 file holding one JSON object"


def _why(err: BaseException) -> str:
    """An OS or decoding error in a few words, without the file's content."""
    if isinstance(err, UnicodeDecodeError):
        return f"byte 0x{err.object[err.start]:02x} at offset {err.start} is not UTF-8"
    return getattr(err, "strerror", None) or type(err).__name__


def _bad(path: Path, key: str | None, message: str, hint: str, **extra: Any) -> Problem:
    details = {"file": str(path), "key": key}
    return problem("CONFIG_INVALID", message, hint, file=str(path), details=details, **extra)
