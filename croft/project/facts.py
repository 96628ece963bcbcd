"""Static facts of an asset (kind, schedule, inputs, key, ...) read from its text, never by importing it.

A Python asset's settings are the literal keyword arguments of its ``@ingest(...)`` / ``@transform(...)``
decorator: the file is parsed with ``ast`` and each value goes through ``ast.literal_eval``. Whatever
cannot be read that way is an ``ASSET_INVALID`` problem with its line, and the asset still appears, so
``croft validate`` and a bare ``croft run`` can show it failing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from croft import INGEST_OPTIONS, TRANSFORM_OPTIONS
from croft.core.duration import parse_seconds
from croft.core.problems import Problem, problem
from croft.core.suggest import nearest
from croft.project.asset import DEFAULT_RETRIES, AssetFacts
from croft.project.bounds import (
    bound_problem,
    max_runtime_problem,
    pool_problem,
    remind_problem,
    remind_seconds,
    url_or_env_problem,
)
from croft.project.rules import quiet_problem, write_mode_problem

if TYPE_CHECKING:
    from typing import Any

    from croft.project.asset import Kind

__all__ = [
    "NAME_PATTERN",
    "DecoratedAsset",
    "find_asset_function",
    "parse_duration",
    "read_python_facts",
]


NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
SECRET_NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # compiled (and cached by re) when an asset names secrets
WRITE_MODES = ("replace", "append", "merge")
DECORATOR_KINDS: dict[str, Kind] = {"ingest": "ingest", "transform": "python"}
INGEST_FORM = '@ingest(schedule="every hour", key="id")\ndef rows(ctx):\n    yield {...}'
TRANSFORM_FORM = '@transform(inputs=["orders"], key="id")\ndef rows(ctx):\n    yield from ctx.rows("orders")'


@dataclass(frozen=True)
class DecoratedAsset:
    """The function carrying croft's decorator, as found in a parsed module."""

    kind: Kind
    function: ast.FunctionDef | ast.AsyncFunctionDef
    decorator: ast.expr


def parse_duration(value: Any) -> float | None:
    """Seconds in ``600``, ``"90s"``, ``"10m"``, ``"1.5 hours"``; None when it is not a positive duration."""
    seconds = parse_seconds(value)
    return seconds if seconds else None


def find_asset_function(tree: ast.Module) -> list[DecoratedAsset]:
    """Top-level functions decorated with croft's ``ingest``/``transform`` (``croft.ingest`` too)."""
    names: dict[str, Kind] = dict(DECORATOR_KINDS)
    modules = {"croft"}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "croft" and node.level == 0:
            for alias in node.names:
                if alias.name in DECORATOR_KINDS:
                    names[alias.asname or alias.name] = DECORATOR_KINDS[alias.name]
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name == "croft" and a.asname)
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            kind = None
            if isinstance(target, ast.Name):
                kind = names.get(target.id)
            elif (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id in modules
            ):
                kind = DECORATOR_KINDS.get(target.attr)
            if kind:
                found.append(DecoratedAsset(kind, node, decorator))
    return found


def read_python_facts(path: Path, name: str, rel: str) -> AssetFacts:
    """Facts of ``assets/**/<name>.py`` from its syntax tree; never imports or executes it."""
    reader = _Reader(path, name, rel)
    return reader.read()


class _Reader:
    """Collects facts and problems for one Python asset; one instance per read."""

    def __init__(self, path: Path, name: str, rel: str):
        self.path, self.name, self.rel = path, name, rel
        self.problems: list[Problem] = []
        self.values: dict[str, Any] = {}
        self.lines: dict[str, int] = {}

    def invalid(
        self, message: str, hint: str, line: int | None, code: str = "ASSET_INVALID", **extra: Any
    ) -> None:
        where = f"{self.rel} line {line}" if line else self.rel
        self.problems.append(
            problem(code, f"{where}: {message}", hint, asset=self.name, file=self.rel, line=line, **extra)
        )

    def facts(self, kind: Kind, **values: Any) -> AssetFacts:
        return AssetFacts(
            name=self.name, kind=kind, path=self.path, rel=self.rel, problems=tuple(self.problems), **values
        )

    def read(self) -> AssetFacts:
        try:
            source = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            self.invalid(
                f"cannot be read as UTF-8 text ({type(err).__name__})", "save the file as UTF-8", None
            )
            return self.facts("python")
        try:
            tree = ast.parse(source, filename=self.rel)
        except SyntaxError as err:
            self.invalid(
                f"is not valid Python: {err.msg}",
                "fix the syntax error; croft reads the file's text",
                err.lineno,
            )
            sniffed: Kind = "ingest" if re.search(r"@\s*(croft\.)?ingest\b", source) else "python"
            return self.facts(sniffed)
        found = find_asset_function(tree)
        if not found:
            self.invalid(
                "defines no @ingest or @transform",
                f"an asset file decorates one function, for example:\n{INGEST_FORM}",
                None,
            )
            return self.facts("python")
        if len(found) > 1:
            lines = ", ".join(str(f.function.lineno) for f in found)
            self.invalid(
                f"has {len(found)} croft decorators (lines {lines}); one file is one asset",
                "move each asset into its own file under assets/",
                found[1].function.lineno,
            )
        asset = found[0]
        if isinstance(asset.function, ast.AsyncFunctionDef):
            self.invalid(
                f"async def {asset.function.name} cannot be an asset; croft iterates a plain generator",
                "write it as `def rows(ctx):` that yields rows; ctx.http already waits for you",
                asset.function.lineno,
            )
        self.read_options(asset)
        return self.build(asset.kind)

    def read_options(self, asset: DecoratedAsset) -> None:
        word = "ingest" if asset.kind == "ingest" else "transform"
        allowed = INGEST_OPTIONS if asset.kind == "ingest" else TRANSFORM_OPTIONS
        form = INGEST_FORM if asset.kind == "ingest" else TRANSFORM_FORM
        call = asset.decorator
        if not isinstance(call, ast.Call):
            self.invalid(
                f"@{word} needs parentheses and its options as keywords", f"write it as:\n{form}", call.lineno
            )
            return
        if call.args:
            self.invalid(
                f"@{word}() takes keyword options only", f"write it as:\n{form}", call.args[0].lineno
            )
        for kw in call.keywords:
            line = kw.value.lineno
            if kw.arg is None:
                self.invalid(
                    f"@{word}(**...) cannot be read without running the file",
                    "write each option as a literal keyword argument",
                    line,
                )
                continue
            if kw.arg not in allowed:
                self.unknown_option(word, kw.arg, allowed, line)
                continue
            try:
                self.values[kw.arg] = ast.literal_eval(kw.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                self.invalid(
                    f"{kw.arg}= is not a literal ({ast.unparse(kw.value)[:60]}); croft reads settings "
                    "without running the file",
                    f"write {kw.arg}= as a literal (a string, number, list or dict), not a variable or call",
                    line,
                )
                continue
            self.lines[kw.arg] = line

    def unknown_option(self, word: str, option: str, allowed: frozenset[str], line: int) -> None:
        if word == "transform" and option == "schedule":
            self.invalid(
                "@transform() takes no schedule=; transforms follow their inputs",
                "schedule the ingests it reads instead; it rebuilds when they change",
                line,
            )
            return

        close = nearest(option, sorted(allowed))
        hint = (
            f"did you mean {close}=? " if close else ""
        ) + f"@{word}() options: {', '.join(sorted(allowed))}"
        self.invalid(f"@{word}() has no option {option}=", hint, line, suggestion=close)

    def bad(self, option: str, message: str, hint: str, code: str = "ASSET_INVALID") -> None:
        self.invalid(f"{option}= {message}", hint, self.lines.get(option), code=code)

    def build(self, kind: Kind) -> AssetFacts:
        v = self.values
        out: dict[str, Any] = {}
        if "schedule" in v:
            if isinstance(v["schedule"], str) and v["schedule"].strip():
                out["schedule"] = v["schedule"].strip()
                out["schedule_line"] = self.lines["schedule"]
            else:
                self.bad(
                    "schedule",
                    "must be a non-empty string",
                    'e.g. schedule="every hour" or a 5-field cron like schedule="0 6 * * *"',
                )
        out["key"] = self.names_list(
            "key", v.get("key"), allow_str=True, example='key="id" or key=["a", "b"]'
        )
        out["secrets"] = self.names_list(
            "secrets", v.get("secrets"), example='secrets=["API_KEY"]', pattern=SECRET_NAME
        )
        out["checks"] = self.names_list("checks", v.get("checks"), example='checks=["amount >= 0"]')
        out["inputs"] = self.names_list(
            "inputs", v.get("inputs"), example='inputs=["orders", "customers"]', pattern=NAME_PATTERN
        )
        out["incremental"] = self.incremental(v.get("incremental"))
        if v.get("write") in WRITE_MODES:
            out["write"] = v["write"]
        if "description" in v:
            if isinstance(v["description"], str):
                out["description"] = v["description"]
            else:
                self.bad("description", "must be a string", 'description="What this table holds"')
        self.checked(out, "retries", "retries", f"the default is {DEFAULT_RETRIES}")
        self.checked(
            out, "timeout", "timeout", 'e.g. timeout="10m", "90s" or 600', "timeout_s", parse_seconds
        )
        self.checked(
            out,
            "max_runtime",
            max_runtime_problem,
            'e.g. max_runtime="30m", "2h" or 1800',
            "max_runtime_s",
            parse_seconds,
        )
        self.checked(out, "pool", pool_problem, 'e.g. pool="stripe", a key of croft.json\'s "pools"')
        self.alerts(out)
        self.release(out)
        self.cross_checks(kind, out)
        return self.facts(kind, **out)

    def alerts(self, out: dict[str, Any]) -> None:
        """notify_after=, notify_remind=, run_ping=, fresh_within=, slow_after=: the rules croft.json's
        notify keys use too (``rules``)."""

        def spoken(value: Any) -> float | None:  # text without a unit ("6") is refused for these keys
            return parse_seconds(value, bare_text=False)

        self.checked(
            out,
            "notify_after",
            "notify.after",
            "e.g. notify_after=3: tell at the third failure in a row",
        )
        self.checked(
            out,
            "notify_remind",
            remind_problem,
            'e.g. notify_remind="2h" or "never"',
            "notify_remind_s",
            remind_seconds,
        )
        self.checked(
            out,
            "run_ping",
            url_or_env_problem,
            'e.g. run_ping="https://hc-ping.com/<uuid>" or run_ping="HC_ORDERS"',
        )
        self.checked(out, "fresh_within", "fresh_within", 'e.g. fresh_within="6h"', "fresh_within_s", spoken)
        self.checked(
            out,
            "slow_after",
            "slow_after",
            'e.g. slow_after="10m": tell once when a scheduled run passes it',
            "slow_after_s",
            spoken,
        )

    def release(self, out: dict[str, Any]) -> None:
        """jitter= and quiet=: when a fire is let go, by the rules croft.json's jitter and quiet use."""
        self.checked(
            out,
            "jitter",
            "jitter",
            'e.g. jitter="5m": each fire waits 0 to 5 min, the same wait for the same fire',
            "jitter_s",
            lambda value: parse_seconds(value, bare_text=False),
        )
        self.checked(
            out,
            "quiet",
            quiet_problem,
            'e.g. quiet=["22:00-06:00"]: fires inside run once when the window ends',
            "quiet",
            lambda value: (value,) if isinstance(value, str) else tuple(value),
        )

    def checked(
        self,
        out: dict[str, Any],
        option: str,
        rule: str | Callable[[Any], str | None],
        hint: str,
        key: str | None = None,
        convert: Callable[[Any], Any] | None = None,
    ) -> None:
        """One option through its rule (``rules``: the same function validate, run and tick use): into
        ``out[key]`` (its own name by default), converted, when the rule passes it; else one problem.
        ``rule`` is a row of ``bounds.BOUNDS`` by name, or a check of its own."""
        v = self.values
        if option not in v:
            return
        value = v[option]
        why = bound_problem(rule, value) if isinstance(rule, str) else rule(value)
        if why:
            self.bad(option, why, hint)
        else:
            out[key or option] = convert(value) if convert else value

    def names_list(
        self,
        option: str,
        value: Any,
        example: str,
        allow_str: bool = False,
        pattern: re.Pattern[str] | str | None = None,
    ) -> tuple[str, ...]:
        if value is None:
            return ()
        items = [value] if allow_str and isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) and i.strip() for i in items):
            kinds = "a string or a list of strings" if allow_str else "a list of strings"
            self.bad(option, f"must be {kinds}", example)
            return ()
        cleaned = tuple(dict.fromkeys(i.strip() for i in items))
        wrong = [i for i in cleaned if pattern and not re.fullmatch(pattern, i)]
        if wrong:
            self.bad(option, f"has names croft cannot use: {', '.join(wrong)}", example)
            return tuple(i for i in cleaned if i not in wrong)
        return cleaned

    def incremental(self, value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        hint = (
            'incremental="updated_at" or incremental={"field": "created", "unit": "s", "lookback": "30 days"}'
        )
        if isinstance(value, str) and value.strip():
            return {"field": value.strip(), "unit": None, "lookback": None}
        if not isinstance(value, dict):
            self.bad("incremental", "must be a field name or a dict with field, unit and lookback", hint)
            return None
        extra = sorted(set(value) - {"field", "unit", "lookback"})
        field_name, unit, lookback = value.get("field"), value.get("unit"), value.get("lookback")
        if extra:
            self.bad("incremental", f"has unknown keys {', '.join(map(str, extra))}", hint)
        elif not isinstance(field_name, str) or not field_name.strip():
            self.bad("incremental", "needs a field name", hint)
        elif unit not in (None, "s", "ms"):
            self.bad("incremental", f'unit must be "s" or "ms" (epoch numbers), not {unit!r}', hint)
        elif lookback is not None and not isinstance(lookback, str):
            self.bad("incremental", 'lookback must be text such as "30 days"', hint)
        else:
            return {"field": field_name.strip(), "unit": unit, "lookback": lookback}
        return None

    def cross_checks(self, kind: Kind, out: dict[str, Any]) -> None:
        if kind == "python" and not out["inputs"] and "inputs" not in self.lines:
            self.invalid(
                "@transform() needs inputs=[...], the assets it reads",
                f"for example:\n{TRANSFORM_FORM}",
                None,
            )
        bad = write_mode_problem(self.values.get("write"), out["key"], bool(out["incremental"]))
        if bad:
            code, option, message, hint = bad
            self.bad(option, message, hint, code=code)
