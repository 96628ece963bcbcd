"""``docs/agents.md`` (``croft docs agents``): how to connect Claude Code, Cursor and Codex, with settings
that parse and name the command that exists."""

from __future__ import annotations

import json
import re
import tomllib

from click.testing import CliRunner

from croft.cli.docs import topics
from croft.cli.group import build_group


def _page() -> str:
    return topics()["agents"].read_text()


def test_croft_docs_agents_and_the_words_an_agent_user_types_open_the_page() -> None:
    for words in (["agents"], ["mcp"], ["claude"], ["claude-code"], ["codex"], ["skill"]):
        out = CliRunner().invoke(build_group(), ["docs", *words])
        assert out.exit_code == 0 and out.stdout.strip() == _page().strip(), words


def test_the_page_connects_each_agent_with_settings_that_parse() -> None:
    page = _page()
    for heading in ("### Claude Code", "### Cursor", "### Codex"):
        assert heading in page
    blocks = re.findall(r"```(json|toml)\n(.*?)```", page, re.S)
    servers = []
    for kind, body in blocks:
        parsed = json.loads(body) if kind == "json" else tomllib.loads(body)
        servers.append(parsed.get("mcpServers", parsed.get("mcp_servers"))["croft"])
    assert len(servers) == 3
    for server in servers:
        assert server["command"] == "croft" and server["args"][0] == "mcp"
    assert "claude mcp add croft -- croft mcp" in page and "codex mcp add croft -- croft mcp" in page
