"""Writing the agent files (``skill.SKILL_FILE``, ``skill.AGENTS_FILE``) into a project: the managed block
is put in or replaced, every byte outside it is kept, and a file already as it should be is not touched
(so ``croft init --agents`` run twice changes nothing)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from croft.agents.skill import AGENTS_FILE, BEGIN, END, SKILL_FILE, agents_block, skill_block, skill_file
from croft.core.disk import os_problem
from croft.core.problems import CroftError

__all__ = ["merged", "plan_agent_files", "write_agent_files"]

FILE_LIMIT = 1_000_000  # bytes: an AGENTS.md larger than this is not one croft edits


def merged(existing: str | None, block: str, new_file: str, rel: str) -> str:
    """The file's new text: ``new_file`` when there is none; else its block replaced in place (one begin
    and one end marker, in that order), or the block appended after a blank line when it has none."""
    if existing is None:
        return new_file
    begins, ends = existing.count(BEGIN), existing.count(END)
    if begins == 0 and ends == 0:  # after the user's text, a blank line between
        if existing == "" or existing.endswith("\n\n"):
            return existing + block
        return existing + ("\n" if existing.endswith("\n") else "\n\n") + block
    start, stop = existing.find(BEGIN), existing.find(END)
    if begins != 1 or ends != 1 or stop < start:
        raise CroftError(
            "AGENTS_BLOCK_INVALID",
            f"{rel} has {begins} begin and {ends} end markers of croft's block, not one of each in order,"
            " so croft cannot tell its text from yours",
            f"Keep one `{BEGIN}` line and one `{END}` line after it around croft's block (or remove both"
            " and croft adds a fresh block at the end), then run `croft init --agents` again.",
            details={"file": rel, "begins": begins, "ends": ends},
        )
    after = stop + len(END)
    if existing[after : after + 1] == "\n":
        after += 1
    return existing[:start] + block + existing[after:]


def plan_agent_files(root: Path) -> list[tuple[str, str | None, str]]:
    """``(relative path, its text now or None, its text to be)`` for each agent file under ``root``; raises
    before anything is written when a file cannot take croft's block."""
    planned = []
    for rel, block, new_file in (
        (SKILL_FILE, skill_block(), skill_file()),
        (AGENTS_FILE, agents_block(), agents_block()),
    ):
        existing = _read(root / rel, rel)
        planned.append((rel, existing, merged(existing, block, new_file, rel)))
    return planned


def write_agent_files(
    root: Path, planned: list[tuple[str, str | None, str]] | None = None
) -> dict[str, list[str]]:
    """Put croft's block in SKILL.md and AGENTS.md under ``root`` (as ``plan_agent_files`` planned it):
    ``{written, unchanged}``, paths relative to the root."""
    out: dict[str, list[str]] = {"written": [], "unchanged": []}
    for rel, existing, text in plan_agent_files(root) if planned is None else planned:
        if text == existing:
            out["unchanged"].append(rel)
            continue
        _write(root / rel, text)
        out["written"].append(rel)
    return out


def _read(path: Path, rel: str) -> str | None:
    try:
        if path.stat().st_size > FILE_LIMIT:
            raise _invalid(rel, f"it is larger than {FILE_LIMIT:,} bytes")
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise _invalid(rel, "it is not UTF-8 text") from None
    except OSError as exc:
        raise _os_error(exc, path) from None


def _invalid(rel: str, why: str) -> CroftError:
    return CroftError(
        "AGENTS_BLOCK_INVALID",
        f"croft cannot put its block in {rel}: {why}",
        f"Make {rel} a UTF-8 text file (or move it aside), then run `croft init --agents` again.",
        details={"file": rel},
    )


def _write(path: Path, text: str) -> None:
    """Replace the file in one rename (its mode kept), so a failed write leaves it as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
        with open(tmp, "xb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _os_error(exc, path) from None


def _os_error(exc: OSError, path: Path) -> CroftError:
    found = os_problem(exc, f"croft could not write {path}", path)
    if found is not None:
        return CroftError(found)
    return CroftError(
        "PATH_UNWRITABLE",
        f"croft could not write {path}: {exc.strerror or type(exc).__name__}",
        "Make the folder writable by this user, then run `croft init --agents` again.",
        details={"path": str(path)},
    )
