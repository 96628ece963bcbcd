"""Code fingerprints: a hash per asset that moves when what it would compute moves, and a cheap file key.

The code hash covers the asset's code, the project-local modules it imports (transitively, e.g. ``lib/``), the
installed versions of the third-party packages those import, and the project time zone. Comments, formatting
and docstrings do not count (Python is hashed as ``ast.dump``; SQL as normalised tokens), and neither does
the decorated function's name or the asset's file name, so a renamed asset keeps its hash. The SQL header's
description does not count either (nor does ``description=`` in Python): it changes no row.

The file key is what a scheduler compares first: the asset's bytes, the zone, and the size and mtime of each
local module in the import closure. When it is unchanged the code hash cannot have changed, except through a
package upgrade, which the next code hash (taken when the asset runs) picks up.
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING

from croft.project.asset import AssetFacts
from croft.project.config import Project
from croft.project.facts import find_asset_function
from croft.project.rules import LOCAL_PACKAGES
from croft.project.sqlfacts import SqlTextError, normalize_sql

if TYPE_CHECKING:
    from hashlib import _Hash

__all__ = ["FORMAT", "ImportClosure", "code_hash", "file_key", "import_closure"]

FORMAT = "v1"  # the fingerprint format, not croft's version: an upgrade of croft must not re-hash every asset
ASSET_FUNCTION = "__croft_asset__"
_NOT_THIRD_PARTY = frozenset({"croft", "__future__", "__main__"})
_SCAN_CACHE: dict[tuple[str, int, int, str], tuple[tuple[Path, ...], tuple[str, ...]]] = {}


@dataclass(frozen=True)
class ImportClosure:
    """What an asset pulls in: project-local module files (sorted) and third-party top-level module names."""

    local: tuple[Path, ...]
    external: tuple[str, ...]


def code_hash(project: Project, facts: AssetFacts, zone: str | None = None) -> str:
    """The asset's code fingerprint (hex sha256). ``zone`` overrides the project's, to tell a zone change
    from an edit by re-hashing in the old zone."""
    tz = zone if zone is not None else project.config.timezone
    if facts.kind == "sql":
        return _sql_hash(facts, tz)
    return _python_hash(project.root, facts.path, tz)


def file_key(project: Project, facts: AssetFacts) -> str:
    """A cheap key that changes whenever the code hash may have (package upgrades aside); no ``ast.dump``."""
    digest = sha256()
    _feed(digest, FORMAT, "file-key", project.config.timezone)
    try:
        data = facts.path.read_bytes()
    except OSError:
        _feed(digest, "missing")
        return digest.hexdigest()
    _feed(digest, data)
    if facts.kind != "sql":
        root = project.root
        for path in import_closure(root, facts.path, source=data).local:
            try:
                stat = path.stat()
            except OSError:
                _feed(digest, _rel(root, path), "gone")
                continue
            _feed(digest, _rel(root, path), str(stat.st_size), str(stat.st_mtime_ns))
    return digest.hexdigest()


def import_closure(root: Path, path: Path, source: bytes | str | None = None) -> ImportClosure:
    """Local modules reachable from ``path`` through imports (``lib.x``, ``from lib import y``, relative
    imports; files under ``root`` only) and the third-party top-level names any of them import."""
    root = root.resolve()
    seen: set[Path] = set()
    external: set[str] = set()
    first_local, first_external = _scan(root, path.resolve(), source)
    todo = list(first_local)
    external.update(first_external)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        local, names = _scan(root, module, None)
        external.update(names)
        todo.extend(p for p in local if p not in seen)
    seen.discard(path.resolve())
    return ImportClosure(tuple(sorted(seen, key=lambda p: _rel(root, p))), tuple(sorted(external)))


def _python_hash(root: Path, path: Path, zone: str) -> str:
    digest = sha256()
    try:
        source = path.read_bytes()
    except OSError:
        _feed(digest, FORMAT, "missing", zone)
        return digest.hexdigest()
    _feed(digest, FORMAT, "python", _asset_dump(source))
    closure = import_closure(root, path, source=source)
    for module in closure.local:
        _feed(digest, "module", _rel(root.resolve(), module), _module_dump(module))
    if closure.external:  # only then the installed packages' index (``project.packages``, dear to load)
        from croft.project.packages import versions_of

        for name in closure.external:
            _feed(digest, "package", name, *versions_of(name))
    _feed(digest, "zone", zone)
    return digest.hexdigest()


def _sql_hash(facts: AssetFacts, zone: str) -> str:
    digest = sha256()
    header = json.dumps({"key": list(facts.key), "checks": list(facts.checks)}, separators=(",", ":"))
    if facts.sql is not None:
        body = normalize_sql(facts.sql)
    else:  # a file croft could not read as one SELECT: any byte change counts
        try:
            text = facts.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        try:
            body = "raw:" + normalize_sql(text)
        except SqlTextError:
            body = "raw:" + text
    _feed(digest, FORMAT, "sql", header, body, "zone", zone)
    return digest.hexdigest()


def _asset_dump(source: bytes) -> str:
    """``ast.dump`` of the asset with docstrings, the function's name and ``description=`` taken out."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return "raw:" + sha256(source).hexdigest()
    _strip_docstrings(tree)
    for asset in find_asset_function(tree)[:1]:
        asset.function.name = ASSET_FUNCTION
        if isinstance(asset.decorator, ast.Call):
            asset.decorator.keywords = [k for k in asset.decorator.keywords if k.arg != "description"]
    return ast.dump(tree, include_attributes=False)


def _module_dump(path: Path) -> str:
    try:
        source = path.read_bytes()
    except OSError:
        return "missing"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return "raw:" + sha256(source).hexdigest()
    _strip_docstrings(tree)
    return ast.dump(tree, include_attributes=False)


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]


def _scan(root: Path, path: Path, source: bytes | str | None) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """One file's direct imports: (local module files, third-party top-level names). Cached by mtime/size."""
    cache_key = None
    if source is None:
        try:
            stat = path.stat()
            source = path.read_bytes()
        except OSError:
            return (), ()
        cache_key = (str(path), stat.st_mtime_ns, stat.st_size, str(root))
        if cache_key in _SCAN_CACHE:
            return _SCAN_CACHE[cache_key]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return (), ()
    local: list[Path] = []
    external: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if _is_local(root, parts[0]):
                    local.extend(_resolve(root, parts))
                else:
                    external.add(parts[0])
        elif isinstance(node, ast.ImportFrom):
            module = node.module.split(".") if node.module else []
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                found = _resolve(base, module, within=root)
                for alias in node.names:
                    found += _resolve(base, [*module, alias.name], within=root, parents=False)
                local.extend(found)
            elif module and _is_local(root, module[0]):
                local.extend(_resolve(root, module))
                for alias in node.names:
                    local.extend(_resolve(root, [*module, alias.name], parents=False))
            elif module:
                external.add(module[0])
    result = (
        tuple(dict.fromkeys(p for p in local if p != path)),
        tuple(sorted(n for n in external if not _is_stdlib(n))),
    )
    if cache_key is not None:
        _SCAN_CACHE[cache_key] = result
    return result


def _resolve(base: Path, parts: list[str], within: Path | None = None, parents: bool = True) -> list[Path]:
    """Files a dotted module name under ``base`` executes: its parent packages' ``__init__.py`` and itself."""
    within = within or base
    if not parts:
        init = base / "__init__.py"
        return [init.resolve()] if init.is_file() and _inside(init, within) else []
    target = base.joinpath(*parts)
    candidates = [target.with_name(target.name + ".py"), target / "__init__.py"]
    module = next((c for c in candidates if c.is_file()), None)
    if module is None or not _inside(module, within):
        return []
    found = [module.resolve()]
    if parents:
        for depth in range(1, len(parts)):
            init = base.joinpath(*parts[:depth], "__init__.py")
            if init.is_file():
                found.append(init.resolve())
    return found


def _is_local(root: Path, top: str) -> bool:
    """A run finds only ``lib`` in the project root (``engine.loader``): that alone is local."""
    return top in LOCAL_PACKAGES and ((root / top).is_dir() or (root / f"{top}.py").is_file())


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _is_stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names or name in sys.builtin_module_names or name in _NOT_THIRD_PARTY


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _feed(digest: _Hash, *parts: str | bytes) -> None:
    """Length-prefixed parts, so two different part lists can never feed the same bytes."""
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
