"""``croft context``: the payload an agent reads first, from croft status's own functions, at most 20 KB."""

from __future__ import annotations

import json
from pathlib import Path

from enginekit import croft

from croft.agents.askfirst import ASK_FIRST
from croft.agents.context import CAP_BYTES

SECRET = "hunter2-very-secret"

ITEMS = """
from croft import ingest


@ingest(schedule="every hour", key="id", secrets=["API_KEY"])
def rows(ctx):
    ctx.log("calling the API with " + ctx.secret("API_KEY"))
    yield [{"id": 1, "name": "apples"}, {"id": 2, "name": "pears"}]
"""

BROKEN = """
from croft import ingest


@ingest(key="id", secrets=["API_KEY"])
def rows(ctx):
    ctx.log("about to fail, key " + ctx.secret("API_KEY"))
    ctx.log("clear \\x1b[2J the screen")
    raise RuntimeError("the upstream said no")
"""

SUMMARY = """
-- description: how many items there are
-- key: n
SELECT count(*) AS n FROM items
"""


def _project(make_project) -> Path:
    root = make_project(
        {
            "assets/items.py": ITEMS,
            "assets/broken.py": BROKEN,
            "assets/summary.sql": SUMMARY,
            ".env": f"API_KEY={SECRET}\n",
        }
    )
    croft(root, "run", "items", "--only")
    croft(root, "run", "broken", env={"CROFT_RETRY_DELAYS": "0,0"})
    return root


def _size(envelope: dict) -> int:
    return len(json.dumps(envelope, ensure_ascii=False).encode("utf-8"))


def test_context_gives_the_project_each_asset_and_what_to_ask_first(make_project) -> None:
    root = _project(make_project)
    code, envelope = croft(root, "context")
    assert code == 0, envelope
    data = envelope["data"]
    assert data["project"]["root"] == str(root) and data["project"]["assets"] == 3
    assert data["project"]["scheduling"]["setting"] == "off"
    assert [a["what"] for a in data["askFirst"]] == [what for what, _ in ASK_FIRST]
    assets = {a["asset"]: a for a in data["assets"]}
    items = assets["items"]
    assert items["kind"] == "ingest" and items["schedule"] == "every hour" and items["rows"] == 2
    assert items["columns"] == ["id INTEGER", "name TEXT"]
    assert items["readBy"] == ["summary"] and assets["summary"]["reads"] == ["items"]
    assert assets["summary"]["description"] == "how many items there are"
    assert assets["summary"]["stale"] == ["never built"]
    assert assets["items"]["lastRun"]["status"] == "ok"
    assert data["truncated"] is False
    # the hold and what releases it: the same decision croft status shows
    code, status = croft(root, "status")
    assert code == 0, status
    held = {a["asset"]: a["schedule"]["hold"] for a in status["data"]["assets"] if a["schedule"]["hold"]}
    assert {a["asset"]: a["hold"]["code"] for a in data["assets"] if "hold" in a} == {
        name: hold["code"] for name, hold in held.items()
    }
    assert {"command": "croft run", "reason": "build what is stale"} in data["fixes"]


def test_a_failure_comes_with_its_redacted_log_tail_and_where_to_read_more(make_project) -> None:
    root = _project(make_project)
    code, envelope = croft(root, "context")
    assert code == 0, envelope
    (failure,) = envelope["data"]["recentFailures"]
    assert failure["asset"] == "broken" and failure["code"] == "ASSET_CODE_ERROR"
    assert failure["logsCommand"] == "croft logs broken --failed"
    assert any("[redacted:API_KEY]" in line for line in failure["logTail"])
    assert SECRET not in json.dumps(envelope)
    broken = next(a for a in envelope["data"]["assets"] if a["asset"] == "broken")
    assert broken["lastRun"]["status"] == "failed" and broken["failingInARow"] == 1


def test_asset_gives_one_asset_and_a_typo_is_unknown_asset(make_project) -> None:
    root = _project(make_project)
    code, envelope = croft(root, "context", "--asset", "items")
    assert code == 0 and [a["asset"] for a in envelope["data"]["assets"]] == ["items"]
    assert envelope["data"]["recentFailures"] == []
    code, envelope = croft(root, "context", "--asset", "itemz")
    assert code == 2 and envelope["problems"][0]["code"] == "UNKNOWN_ASSET"
    assert envelope["problems"][0]["fix"]["command"] == "croft context --asset items"


def test_500_assets_stay_under_20_KB_and_say_truncated(make_project) -> None:
    files = {
        f"assets/src_{i:03d}.py": ITEMS.replace('secrets=["API_KEY"]', "").replace(
            'ctx.log("calling the API with " + ctx.secret("API_KEY"))', "pass"
        )
        for i in range(50)
    }
    for i in range(450):
        files[f"assets/t_{i:03d}.sql"] = (
            f"-- description: transform number {i}, a longish description to take some room\n"
            f"-- key: n\nSELECT count(*) AS n FROM src_{i % 50:03d}\n"
        )
    root = make_project(files)
    code, envelope = croft(root, "context")
    assert code == 0, envelope["problems"][:3]
    assert _size(envelope) <= CAP_BYTES
    data = envelope["data"]
    assert data["truncated"] is True and data["leftOut"]
    assert data["project"]["assets"] == 500
    # what was left out is counted, never silently dropped
    shown = len(data["assets"]) + len(data.get("quietAssets", []))
    left = data["leftOut"].get("assets", {}).get("count", 0)
    assert shown + left == 500 or "quietAssets" in data["leftOut"]
    code, text_envelope = croft(root, "context", "--asset", "t_007")
    assert text_envelope["data"]["truncated"] is False
    assert text_envelope["data"]["assets"][0]["reads"] == ["src_007"]


def test_plain_text_names_the_assets_and_the_ask_first_list(make_project) -> None:
    import os

    from click.testing import CliRunner

    from croft.cli.group import build_group

    root = _project(make_project)
    old = Path.cwd()
    os.chdir(root)
    try:
        out = CliRunner().invoke(build_group(), ["context"]).stdout
    finally:
        os.chdir(old)
    assert "items (ingest, every hour, 2 rows)" in out
    assert "ask the user first:" in out and "croft schedule on:" in out
    assert "failed: broken" in out and SECRET not in out
    assert "\\x1b[2J" in out and "\x1b" not in out  # a log line cannot drive the reader's terminal


def test_long_problems_and_many_assets_are_cut_to_fit() -> None:
    from croft.agents.context import _fit
    from croft.core.problems import problem
    from croft.core.result import Result

    assets = [
        {"asset": f"a{i:03d}", "kind": "sql", "hold": {"code": "SCHEDULE_HELD", "reason": "x" * 200}}
        for i in range(500)
    ]
    problems = [
        problem("SCHEDULE_HELD", "m" * 4000, "h" * 4000, severity="warning", asset=f"a{i:03d}")
        for i in range(40)
    ]
    data = {
        "project": {},
        "askFirst": [],
        "running": [],
        "assets": assets,
        "recentFailures": [],
        "fixes": [],
        "truncated": False,
    }
    result = Result(data=data, problems=problems)
    _fit(result, keep_columns=False)
    assert len(json.dumps(result.envelope(), ensure_ascii=False).encode()) <= CAP_BYTES
    assert result.data["truncated"] and result.data["leftOut"]["problems"] == 30
    assert result.problems and all(len(p.message) <= 300 for p in result.problems)
    kept = len(result.data["assets"])
    assert 0 < kept < 500 and result.data["leftOut"]["assets"]["count"] == 500 - kept
