"""``croft mcp`` driven by the SDK's own stdio client: the tools, croft's envelopes through them, no run
tool without ``--allow-run``, and an agent's run that builds a held asset the next tick still holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from enginekit import history, table
from mcp import ClientSession, StdioServerParameters, stdio_client
from schedulekit import schedule_on, tick

from croft.agents.mcpserver import ALWAYS_ON

pytestmark = pytest.mark.processes

NOW = "2026-03-02T09:10:00Z"
LATER = "2026-03-02T10:01:00Z"  # after the 10:00 fire of "every hour"

ITEMS = """
from croft import ingest


@ingest(schedule="every hour", key="id")
def rows(ctx):
    yield [{"id": 1, "n": 1}, {"id": 2, "n": 2}]
"""


def _env(now: str) -> dict[str, str]:
    """What the client hands the server (the SDK merges it over a small default environment)."""
    keep = ("CROFT_HOME", "CROFT_JOB_LABEL", "CROFT_NOTIFY_DRY", "TZ", "PYTHONPATH")
    return {
        **{k: os.environ[k] for k in keep if k in os.environ},
        "CROFT_NOW": now,
        "CROFT_RETRY_DELAYS": "0,0",
    }


def _session(root: Path, *flags: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    """Start ``croft mcp FLAGS`` in ``root`` through the SDK's stdio client, list its tools and make the
    calls; returns (tool names, each call's result)."""

    async def go() -> tuple[list[str], list[Any]]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "croft", "mcp", *flags], cwd=str(root), env=_env(NOW)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
            return tools, results

    return anyio.run(go)


def _envelope(result: Any) -> dict[str, Any]:
    """The envelope a tool returned: the same as its text, and croft's four keys."""
    assert not result.is_error, result.content
    envelope = result.structured_content
    assert json.loads(result.content[0].text) == envelope
    assert set(envelope) == {"ok", "data", "problems", "next"}
    return envelope


def test_the_reading_tools_return_crofts_own_envelopes(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    tools, results = _session(
        root,
        calls=[
            ("status", {}),
            ("context", {}),
            ("logs", {}),
            ("validate", {}),
            ("schedule_status", {}),
            ("schedule_explain", {"schedule": "every hour", "n": 2}),
            ("preview", {"asset": "--watch"}),  # a value, never an option
        ],
    )
    assert sorted(tools) == sorted(ALWAYS_ON)  # no run, and nothing turns scheduling on, off or paused
    status, context, logs, validate, sched, explain, odd = (_envelope(r) for r in results)
    assert [a["asset"] for a in status["data"]["assets"]] == ["items"]
    assert status["data"]["assets"][0]["schedule"]["hold"]["code"] == "SCHEDULE_HELD"
    assert context["data"]["assets"][0]["asset"] == "items" and context["data"]["askFirst"]
    assert logs["ok"] and logs["data"]["mode"] == "steps"
    assert validate["ok"] and validate["data"]["assets"][0]["name"] == "items"
    assert sched["ok"] and explain["data"]["cron"] == "0 * * * *" and len(explain["data"]["fires"]) == 2
    assert not odd["ok"] and odd["problems"][0]["code"] == "UNKNOWN_ASSET"
    # the same answer the command gives a person
    out = subprocess.run(
        [sys.executable, "-m", "croft", "validate", "--json"], cwd=root, env={**os.environ, "CROFT_NOW": NOW},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert json.loads(out.stdout) == validate


def test_an_agents_run_builds_a_held_asset_and_the_next_tick_still_holds_it(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    tools, (result, runs_log) = _session(
        root, "--allow-run", calls=[("run", {"assets": ["items"]}), ("logs", {"runs": True})]
    )
    assert "run" in tools
    envelope = _envelope(result)
    assert envelope["ok"] and envelope["data"]["startedBy"] == "agent"
    assert envelope["data"]["awaitingPerson"] == ["items"]
    assert [n["command"] for n in envelope["next"]] == ["croft run items"]
    assert [r["n"] for r in table(root, "items")] == [1, 2]  # the work was done
    assert _envelope(runs_log)["data"]["runs"][0]["startedBy"] == "agent"
    assert history(root, "SELECT trigger, human FROM runs") == [{"trigger": "agent", "human": 0}]

    schedule_on(root, NOW)
    data = tick(root, LATER)
    assert data["spawned"] == []
    (held,) = data["held"]
    assert held["asset"] == "items" and held["code"] == "SCHEDULE_HELD"
    assert "not run by hand yet; croft run items releases it" in held["message"]
    assert "a person has run" in held["hint"]
    assert len(history(root, "SELECT id FROM runs")) == 1  # the tick started nothing


def test_without_the_sdk_croft_mcp_says_how_to_get_it(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    blocked = (
        "import sys; sys.modules['mcp'] = None; from croft.cli.main import main; main(['mcp', '--json'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", blocked], cwd=root, capture_output=True, text=True, timeout=60, check=False
    )
    envelope = json.loads(out.stdout)
    assert out.returncode == 2 and envelope["problems"][0]["code"] == "MCP_MISSING"
    assert envelope["problems"][0]["fix"]["command"] == "pip install 'croft[mcp]'"


def test_check_lists_the_tools_and_run_only_when_allowed(make_project) -> None:
    root = make_project({"assets/items.py": ITEMS})
    for flags, expected in (([], sorted(ALWAYS_ON)), (["--allow-run"], sorted([*ALWAYS_ON, "run"]))):
        out = subprocess.run(
            [sys.executable, "-m", "croft", "mcp", "--check", "--json", *flags],
            cwd=root, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        envelope = json.loads(out.stdout)
        assert out.returncode == 0 and sorted(envelope["data"]["tools"]) == expected


SLOW = """
from croft import ingest


@ingest(key="id")
def rows(ctx):
    import time

    ctx.log("waiting on a server that never answers")
    time.sleep(600)
    yield {"id": 1}
"""


def test_a_command_past_its_deadline_is_stopped_and_still_answers(make_project) -> None:
    from croft.agents.mcpserver import _croft

    root = make_project({"assets/slow.py": SLOW})
    result = anyio.run(_croft, root, ["preview", "--json", "--", "slow"], 15.0)
    envelope = _envelope(result)  # SIGTERM: the preview recorded itself interrupted and printed its envelope
    assert not envelope["ok"] and envelope["problems"][0]["code"] == "INTERRUPTED"
    assert history(root, "SELECT status, trigger FROM runs") == [
        {"status": "interrupted", "trigger": "agent"}
    ]
