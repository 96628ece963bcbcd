"""``croft init``: lay out a working project that runs offline the moment it is made."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from pathlib import Path

from croft.core.problems import CroftError

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
    from zoneinfo import ZoneInfo

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
    zone = timezone or detect_timezone()
    files = {
        "croft.json": json.dumps({"timezone": zone}, indent=2) + "\n",
        ".gitignore": GITIGNORE,
        ".env.example": ENV_EXAMPLE,
        "assets/example_items.py": EXAMPLE_INGEST,
        "assets/example_summary.sql": EXAMPLE_SQL,
        "lib/__init__.py": '"""Code shared by assets: an edit here re-holds the assets that import it."""\n',
    }
    written, kept = [], []
    for rel, text in files.items():
        path = root / rel
        if path.exists():
            kept.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(rel)
    return {"root": str(root), "timezone": zone, "written": written, "kept": kept}
