"""``croft init``: lay out a working project that runs offline the moment it is made."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from pathlib import Path
from zoneinfo import ZoneInfo

from croft.core.paths import require_utf8_path
from croft.core.problems import CroftError
from croft.project.config import check_timezone

__all__ = ["detect_timezone", "init_project"]

EXAMPLE_INGEST = '''\
"""An example ingest that needs no network: replace the body with calls to ctx.http."""

from croft import ingest


@ingest(schedule="every hour", key="id", incremental="updated_at")
def rows(ctx):
    # ctx.since is the saved cursor (the newest updated_at loaded so far) minus a one-second lookback,
    # or None on the first run. A real ingest passes it to its API:
    #   ctx.http.get("https://api.example.com/items", params={"updated_since": ctx.since})
    ctx.log(f"since={ctx.since}")
    yield [
        {"id": 1, "name": "apples", "price": 3, "updated_at": "2026-01-01T09:00:00Z"},
        {"id": 2, "name": "pears", "price": 5, "updated_at": "2026-01-02T09:00:00Z"},
        {"id": 3, "name": "plums", "price": 4, "updated_at": "2026-01-03T09:00:00Z"},
    ]
'''

EXAMPLE_SQL = """\
-- description: how many example items there are and what they cost, built from example_items
-- key: total_items
-- check: total_price >= 0
SELECT count(*) AS total_items, sum(price) AS total_price
FROM example_items
"""

GITIGNORE = """\
.env
.croft/
warehouse.sqlite*
__pycache__/
"""

ENV_EXAMPLE = """\
# Secrets for your ingests: copy this file to .env (git-ignored) and fill in the values.
# An ingest sees only the names it declares in secrets=[...]; croft redacts every value from logs.
# API_KEY=
"""


def detect_timezone() -> str:
    """The machine's IANA zone name: $TZ, /etc/timezone, or the /etc/localtime link; UTC when none says."""

    candidates: list[str] = []
    if os.environ.get("TZ"):
        candidates.append(os.environ["TZ"].lstrip(":"))
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text().strip())
    try:
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        try:
            ZoneInfo(name)
        except (ValueError, KeyError, OSError):
            continue
        if name and not name.startswith("/"):
            return "UTC" if name in {"Etc/UTC", "Etc/Universal", "Universal", "Zulu"} else name
    return "UTC"


def init_project(directory: Path, timezone: str | None = None) -> dict[str, object]:
    """Write the files of a new project into ``directory``; never overwrites an existing file."""
    root = directory.resolve()
    require_utf8_path(root)
    config = root / "croft.json"
    if config.exists():
        raise CroftError(
            "PROJECT_EXISTS",
            f"{config} already exists: {root} is a croft project",
            "Use `croft validate` to check it, or pick an empty folder for a new project.",
            fix={
                "kind": "command",
                "description": "check the existing project",
                "command": f"cd {shlex.quote(str(root))} && croft validate",
            },
        )
    zone = _checked_zone(timezone) if timezone is not None else detect_timezone()
    files = {
        "croft.json": json.dumps({"timezone": zone}, indent=2) + "\n",
        ".gitignore": GITIGNORE,
        ".env.example": ENV_EXAMPLE,
        "assets/example_items.py": EXAMPLE_INGEST,
        "assets/example_summary.sql": EXAMPLE_SQL,
        "lib/__init__.py": '"""Code shared by assets: an edit here re-holds the assets that import it."""\n',
    }
    kept = [rel for rel in files if (root / rel).exists()]
    todo = {rel: text for rel, text in files.items() if rel not in kept}
    _write_all(root, todo)
    return {"root": str(root), "timezone": zone, "written": list(todo), "kept": kept}


def _checked_zone(name: str) -> str:
    """``--timezone`` goes through the same rule as croft.json's "timezone", so init never writes a bad one."""

    bad = check_timezone(name)
    if bad is None:
        return name
    message, hint, suggestion = bad
    raise CroftError(
        "CONFIG_INVALID",
        message.replace('"timezone" is', "--timezone is"),
        hint,
        suggestion=suggestion,
        details={"option": "--timezone"},
    )


def _write_all(root: Path, files: dict[str, str]) -> None:
    """Write every file or none: on the first OS error, what this call created is removed again."""
    made: list[Path] = []
    try:
        for rel, text in files.items():
            path = root / rel
            missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
            for folder in reversed(missing):
                folder.mkdir()
                made.append(folder)
            with path.open("x", encoding="utf-8") as handle:
                made.append(path)
                handle.write(text)
    except OSError as err:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()
        where = Path(err.filename) if err.filename else root
        raise CroftError(
            "PATH_UNWRITABLE",
            f"croft init could not write {where}: {err.strerror or type(err).__name__}; nothing was written",
            "Pick a folder this user can write, and make sure assets/ and lib/ are folders, not files.",
            details={"path": str(where), "errno": err.errno},
        ) from None
