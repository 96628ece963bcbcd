"""Finding a project's assets: every ``assets/**/<name>.py|.sql``, its name checked, its static facts read.

One file is one table named after the file, so a name must be a plain SQL identifier croft can use unquoted,
and two files with one name define no asset at all (``NAME_CONFLICT``) rather than a silent winner.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from croft.core.problems import Problem, problem
from croft.project.asset import AssetFacts
from croft.project.assetfiles import asset_files
from croft.project.config import Project
from croft.project.facts import NAME_PATTERN, read_python_facts
from croft.project.rules import MAX_NAME_LENGTH, pool_in_config, static_problems
from croft.project.sqlfacts import read_sql_facts

__all__ = ["RESERVED_NAMES", "AssetFacts", "all_problems", "check_name", "discover"]

# Words SQLite (or a reader of the SQL) would take for syntax; a table with one of these names needs quoting.
RESERVED_NAMES = frozenset({
    "all", "alter", "and", "as", "between", "case", "check", "collate", "constraint", "create", "cross",
    "default", "delete", "distinct", "drop", "else", "escape", "except", "exists", "foreign", "from", "full",
    "group", "having", "in", "index", "inner", "insert", "intersect", "into", "is", "join", "left", "like",
    "limit", "natural", "new", "not", "null", "on", "or", "order", "outer", "primary", "references", "right",
    "select", "set", "table", "then", "to", "transaction", "union", "unique", "update", "using", "values",
    "when", "where", "with",
})  # fmt: skip


def discover(
    project: Project, known_columns: Mapping[str, Sequence[str]] | None = None
) -> tuple[dict[str, AssetFacts], list[Problem]]:
    """``({name: facts} sorted by name, project-level problems)``.

    The second value holds NAME_INVALID / NAME_CONFLICT; each asset's own static errors stay on its facts
    (``all_problems`` joins both). ``known_columns`` seeds SQL input detection with real table schemas.
    """
    root = project.root
    by_name: dict[str, list[Path]] = {}
    problems: list[Problem] = []
    for path in asset_files(root / "assets"):
        rel = path.relative_to(root).as_posix()
        name = path.stem
        bad = check_name(name, rel)
        if bad:
            problems.append(bad)
            continue
        by_name.setdefault(name, []).append(path)
    assets: dict[str, AssetFacts] = {}
    for name in sorted(by_name):
        paths = by_name[name]
        rels = [p.relative_to(root).as_posix() for p in paths]
        if len(paths) > 1:
            problems.append(
                problem(
                    "NAME_CONFLICT",
                    f"{len(paths)} files define the asset {name}: {', '.join(rels)}",
                    "one name is one table: rename or delete all but one of these files",
                    asset=name,
                    file=rels[0],
                    details={"files": rels},
                )
            )
            continue
        path, rel = paths[0], rels[0]
        if path.suffix == ".sql":
            facts = read_sql_facts(path, name, rel, known_columns)
        else:
            facts = read_python_facts(path, name, rel)
        ruled = static_problems(facts)
        undeclared = pool_in_config(name, rel, facts.pool, project.config.pools)
        if undeclared is not None:
            ruled.append(undeclared)
        assets[name] = replace(facts, problems=(*facts.problems, *ruled)) if ruled else facts
    return assets, problems


def all_problems(assets: Mapping[str, AssetFacts], problems: Iterable[Problem]) -> list[Problem]:
    """Project-level problems then every asset's own, in name order: what ``croft validate`` reports."""
    return [*problems, *(p for facts in assets.values() for p in facts.problems)]


def check_name(name: str, rel: str) -> Problem | None:
    """NAME_INVALID with a usable suggestion when ``name`` cannot be a table name, else None."""
    why = None
    if name.startswith("_"):
        why = "starts with _, which croft keeps for its own tables"
    elif name == "croft" or name.startswith("croft_"):
        why = "starts with croft, which croft keeps for itself"
    elif name.startswith("sqlite_"):
        why = "starts with sqlite_, which SQLite keeps for its own tables"
    elif len(name) > MAX_NAME_LENGTH:
        why = f"is {len(name)} characters long; an asset name has at most {MAX_NAME_LENGTH}"
    elif not NAME_PATTERN.fullmatch(name):
        why = "must be lowercase letters, digits and _, starting with a letter"
    elif name in RESERVED_NAMES:
        why = "is an SQL keyword, so every query would have to quote it"
    if why is None:
        return None
    suggestion = suggest_name(name)
    hint = f"rename the file to {suggestion}{Path(rel).suffix}" if suggestion else "rename the file"
    message = f"{rel}: the asset name {name!r} {why}"
    return problem("NAME_INVALID", message, hint, suggestion=suggestion, file=rel, details={"name": name})


def suggest_name(name: str) -> str | None:
    """A valid name close to ``name``: ``MyTable`` -> ``my_table``, ``order`` -> ``orders``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    text = re.sub(r"[^a-z0-9_]+", "_", text).strip("_")
    text = re.sub(r"_+", "_", text)
    if text == "croft" or text.startswith("croft_"):
        text = text.removeprefix("croft").strip("_") or "data"
    if text.startswith("sqlite_"):
        text = text.removeprefix("sqlite_") or "data"
    if text and text[0].isdigit():
        text = "t_" + text
    if text in RESERVED_NAMES:
        text += "s"
    text = text[:MAX_NAME_LENGTH].rstrip("_")
    if not text or not NAME_PATTERN.fullmatch(text) or text in RESERVED_NAMES:
        return None
    return text
