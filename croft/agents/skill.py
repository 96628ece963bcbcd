"""The texts an agent reads at every start: ``.claude/skills/croft/SKILL.md`` and a block of ``AGENTS.md``.

Both hold one managed block between the markers below; ``croft init --agents`` rewrites the block and
keeps every byte outside it (a user's own notes, another tool's blocks). Kept short on purpose: an agent
reads it before every task, and the details are one command away (``croft context``, ``croft docs``).
"""

from __future__ import annotations

from croft.agents.askfirst import ASK_FIRST, PERSON_RELEASES

__all__ = ["AGENTS_FILE", "BEGIN", "END", "SKILL_FILE", "agents_block", "skill_block", "skill_file"]

SKILL_FILE = ".claude/skills/croft/SKILL.md"
AGENTS_FILE = "AGENTS.md"
BEGIN = "<!-- croft:begin: written by croft init --agents, which rewrites what is between these lines -->"
END = "<!-- croft:end -->"

_FRONT = """\
---
name: croft
description: Work on a croft project (a folder with croft.json whose assets keep local SQLite tables fresh on a schedule) - read its state, fix a failed asset, add or change an ingest or transform.
---
"""


def _ask_first() -> str:
    return "\n".join(
        f"- `{what}`: {why}." if what.startswith("croft") else f"- {what}: {why}." for what, why in ASK_FIRST
    )


def _body(heading: str, sub: str) -> str:
    return f"""\
{heading}

Read `croft context --json` first (the `context` tool of `croft mcp`): the project, each asset, what failed
and why, and the fixes croft already computed. Then work in this order:

1. `croft status --json`: what is stale, failing or held.
2. `croft logs <asset> --failed`: why a run failed, with the end of its log.
3. Edit `assets/<name>.py` or `.sql`, then `croft validate --json`: problems, inputs, schedules.
4. `croft preview <asset>`: the rows and what a run would change; nothing is written.
5. `croft run <asset>`: build it.

Every command takes `--json` and prints one envelope `{{ok, data, problems, next}}`; a problem has a
`hint`, often a `fix`, and `croft docs CODE` explains it. Set `CROFT_AGENT=1` on the commands you run
yourself (`croft mcp` sets it for its tools), so croft records them as an agent's.

{sub} Ask the user first

{_ask_first()}

{sub} Held code waits for a person

The scheduler runs only code a person has run. Your runs and previews build data but approve nothing:
a new or edited asset stays held (`SCHEDULE_HELD`) until the user runs it ({PERSON_RELEASES}).
Say which command releases it; never work around a hold.
"""


def skill_block() -> str:
    """The managed block of SKILL.md, markers included."""
    return f"{BEGIN}\n{_body('# Working on a croft project', '##')}{END}\n"


def skill_file() -> str:
    """A new SKILL.md: the skill's front matter, then its block."""
    return f"{_FRONT}\n{skill_block()}"


def agents_block() -> str:
    """The managed block of AGENTS.md, markers included."""
    return f"{BEGIN}\n{_body('## croft: this folder is a croft project', '###')}{END}\n"
