"""The agent files: ``croft init`` writes the skill and the AGENTS.md block; ``croft init --agents``
refreshes only croft's block and keeps every byte around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from enginekit import croft

from croft.agents.agentfiles import merged
from croft.agents.askfirst import ASK_FIRST
from croft.agents.skill import AGENTS_FILE, BEGIN, END, SKILL_FILE, agents_block
from croft.core.problems import CroftError

MINE_BEFORE = "# Our repo\r\n\r\nRun `make test` before pushing.\r\n"
MINE_AFTER = "\n## Other tool\n<!-- other:begin -->\nleave me\n<!-- other:end -->"  # no final newline


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        rel: ((root / rel).read_bytes(), (root / rel).stat().st_mtime_ns) for rel in (SKILL_FILE, AGENTS_FILE)
    }


def test_init_writes_the_skill_and_the_agents_block(tmp_path: Path) -> None:
    code, envelope = croft(tmp_path, "init", "proj", "--timezone", "UTC")
    assert code == 0, envelope
    root = tmp_path / "proj"
    assert {SKILL_FILE, AGENTS_FILE} <= set(envelope["data"]["written"])
    skill = (root / SKILL_FILE).read_text()
    assert skill.startswith("---\nname: croft\ndescription: ")
    agents = (root / AGENTS_FILE).read_text()
    assert agents == agents_block() and agents.startswith(BEGIN) and agents.rstrip().endswith(END)
    for text in (skill, agents):
        for what, _ in ASK_FIRST:
            assert what in text
        assert "croft context --json" in text and "croft run <asset>" in text
        order = [
            text.index(f"croft {verb}") for verb in ("status", "logs", "validate", "preview", "run <asset>`:")
        ]
        assert order == sorted(order)  # status -> logs -> validate -> preview -> run
        assert len(text) < 3000  # read at every agent start: short


def test_init_agents_twice_changes_nothing(tmp_path: Path) -> None:
    croft(tmp_path, "init", "proj", "--timezone", "UTC")
    root = tmp_path / "proj"
    before = _snapshot(root)
    for _ in range(2):
        code, envelope = croft(root, "init", "--agents")
        assert code == 0, envelope
        assert envelope["data"]["written"] == [] and sorted(envelope["data"]["kept"]) == sorted(
            [SKILL_FILE, AGENTS_FILE]
        )
    assert _snapshot(root) == before  # not even rewritten


def test_text_outside_the_markers_is_kept_byte_for_byte(tmp_path: Path) -> None:
    croft(tmp_path, "init", "proj", "--timezone", "UTC")
    root = tmp_path / "proj"
    old_block = f"{BEGIN}\nan old croft's words\n{END}\n"
    (root / AGENTS_FILE).write_bytes((MINE_BEFORE + old_block + MINE_AFTER).encode())
    skill = root / SKILL_FILE
    skill.write_text(
        skill.read_text().replace("Working on a croft project", "stale heading") + "\nMy own line.\n"
    )
    code, envelope = croft(root, "init", "--agents")
    assert code == 0 and sorted(envelope["data"]["written"]) == sorted([SKILL_FILE, AGENTS_FILE])
    assert (root / AGENTS_FILE).read_bytes() == (MINE_BEFORE + agents_block() + MINE_AFTER).encode()
    assert "stale heading" not in skill.read_text() and skill.read_text().endswith("\nMy own line.\n")
    after = _snapshot(root)
    croft(root, "init", "--agents")
    assert _snapshot(root) == after


def test_an_agents_md_without_markers_gets_the_block_at_its_end(tmp_path: Path) -> None:
    (tmp_path / AGENTS_FILE).write_bytes(MINE_BEFORE.encode())
    code, envelope = croft(tmp_path, "init", ".", "--timezone", "UTC")
    assert code == 0, envelope
    assert (tmp_path / AGENTS_FILE).read_bytes() == (MINE_BEFORE + "\n" + agents_block()).encode()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(f"{BEGIN}\n{BEGIN}\n{END}\n", "AGENTS_BLOCK_INVALID", id="two-begins"),
        pytest.param(f"mine\n{BEGIN}\nno end\n", "AGENTS_BLOCK_INVALID", id="no-end"),
        pytest.param(f"{END}\nmine\n{BEGIN}\n", "AGENTS_BLOCK_INVALID", id="end-first"),
    ],
)
def test_broken_markers_are_refused_and_nothing_is_written(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / AGENTS_FILE).write_text(text)
    code, envelope = croft(tmp_path, "init", ".", "--timezone", "UTC")
    assert code == 2 and envelope["problems"][0]["code"] == problem
    assert (tmp_path / AGENTS_FILE).read_text() == text
    assert not (tmp_path / "croft.json").exists() and not (tmp_path / SKILL_FILE).exists()


def test_an_agents_md_that_is_not_text_is_refused(tmp_path: Path) -> None:
    croft(tmp_path, "init", "proj", "--timezone", "UTC")
    root = tmp_path / "proj"
    (root / AGENTS_FILE).write_bytes(b"\xff\xfe\x00binary")
    code, envelope = croft(root, "init", "--agents")
    assert code == 2 and envelope["problems"][0]["code"] == "AGENTS_BLOCK_INVALID"
    assert (root / AGENTS_FILE).read_bytes() == b"\xff\xfe\x00binary"


def test_init_agents_needs_a_project(tmp_path: Path) -> None:
    code, envelope = croft(tmp_path, "init", "--agents")
    assert code == 2 and envelope["problems"][0]["code"] == "NOT_A_PROJECT"
    assert not (tmp_path / AGENTS_FILE).exists()


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        pytest.param(None, "NEW", id="no-file"),
        pytest.param("", "B", id="empty"),
        pytest.param("mine", "mine\n\nB", id="no-final-newline"),
        pytest.param("mine\n", "mine\n\nB", id="one-newline"),
        pytest.param("mine\n\n", "mine\n\nB", id="blank-line"),
        pytest.param(f"a\n{BEGIN}\nold\n{END}\nz", "a\nBz", id="replaced-in-place"),
        pytest.param(f"a\n{BEGIN}\nold\n{END}", "a\nB", id="block-at-the-very-end"),
    ],
)
def test_merged(existing: str | None, expected: str) -> None:
    assert merged(existing, "B", "NEW", "AGENTS.md") == expected


def test_merged_refuses_two_blocks() -> None:
    with pytest.raises(CroftError) as caught:
        merged(f"{BEGIN}\n{END}\n{BEGIN}\n{END}\n", "B", "NEW", "AGENTS.md")
    assert caught.value.code == "AGENTS_BLOCK_INVALID"
