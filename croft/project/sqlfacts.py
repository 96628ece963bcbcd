"""Static facts of a SQL asset: its ``-- name: value`` header, its one SELECT, and the tables it reads.

Inputs come from SQLite itself: the SELECT is compiled (``EXPLAIN``, so it never runs) on an empty in-memory
database under an authorizer. Tables it names do not exist there, so each "no such table" error adds a stub
table and the compile is tried again; missing columns are added to the stubs the same way. SQLite looks up
every table of a statement before it resolves any column, so the stubs are exactly the tables the statement
reads; CTE names never become stubs. The authorizer refuses anything but reading, which catches writes hidden
in a ``WITH``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from croft.core.duration import parse_seconds
from croft.core.problems import Problem, problem
from croft.core.suggest import nearest
from croft.core.text import clip
from croft.project.asset import DEFAULT_TIMEOUT_S, AssetFacts
from croft.project.bounds import (
    bound_problem,
    max_runtime_problem,
    pool_problem,
    remind_problem,
    remind_seconds,
    url_or_env_problem,
)
from croft.project.checkspec import read_only_denies
from croft.project.facts import parse_duration

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "HEADER_NAMES",
    "Token",
    "normalize_sql",
    "read_sql_facts",
    "split_header",
    "sql_inputs",
    "tokenize",
]

HEADER_NAMES = (
    "check", "description", "key", "timeout", "max_runtime", "pool",
    "notify_after", "notify_remind", "run_ping", "fresh_within", "slow_after",
)  # fmt: skip
ALERT_HEADERS = frozenset({"notify_after", "notify_remind", "run_ping", "fresh_within", "slow_after"})
REPEATABLE = frozenset({"check"})
SCHEDULE_HEADERS = frozenset({"schedule", "jitter", "quiet"})  # an ingest's, never a transform's
MAX_ROUNDS = 200
STUB_COLUMN = "_croft_stub"
# Authorizer action codes (they share numbers with result codes, so no reverse lookup of sqlite3 names).
ACTION_NAMES = {
    1: "create an index", 2: "create a table", 3: "create a temp index", 4: "create a temp table",
    5: "create a temp trigger", 6: "create a temp view", 7: "create a trigger", 8: "create a view",
    9: "delete from", 10: "drop an index", 11: "drop a table", 12: "drop a temp index",
    13: "drop a temp table",
    14: "drop a temp trigger", 15: "drop a temp view", 16: "drop a trigger", 17: "drop a view",
    18: "insert into", 19: "run a pragma", 22: "begin or end a transaction", 23: "update", 24: "attach",
    25: "detach", 26: "alter", 27: "reindex", 28: "analyze", 29: "create a virtual table",
    30: "drop a virtual table", 32: "use a savepoint",
}  # fmt: skip
# Words after which a name in FROM/JOIN is not an alias.
_NOT_ALIAS = frozenset({
    "on", "using", "where", "join", "left", "right", "inner", "outer", "cross", "natural", "full", "group",
    "order", "limit", "union", "except", "intersect", "window", "having", "indexed", "not", "select", "from",
})  # fmt: skip
_HEADER_LINE = re.compile(r"--\s*([a-z][a-z_]*(?: [a-z][a-z_]*)?)\s*:(.*)")
_TOKEN = re.compile(
    r"""
     (?P<ws>\s+)
    |(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<string>'(?:[^']|'')*'?)
    |(?P<blob>[xX]'[0-9a-fA-F]*'?)
    |(?P<qident>"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?)
    |(?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<param>[?:@$][A-Za-z0-9_]*)
    |(?P<word>[^\W\d]\w*\$?)
    |(?P<op>\|\||<<|>>|<=|>=|==|!=|<>|->>|->|[-+*/%<>=~&|(),;.])
    |(?P<other>.)
    """,
    re.S | re.X,
)
_CLOSERS = {"'": "'", '"': '"', "`": "`", "[": "]"}


@dataclass(frozen=True, slots=True)
class Token:
    """One token of SQL text (one per token: slots keep it small)."""

    kind: str  # ws, comment, string, blob, qident, number, param, word, op, other
    text: str
    start: int

    @property
    def lower(self) -> str:
        return self.text.lower()


class SqlTextError(ValueError):
    """Text that is not SQL at the token level (an unterminated string, comment or quoted name)."""

    def __init__(self, message: str, start: int):
        super().__init__(message)
        self.start = start


def tokenize(sql: str) -> list[Token]:
    """Every token of ``sql``, comments and whitespace included; raises SqlTextError for unterminated ones."""
    tokens = []
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup or "other"
        text = match.group()
        if kind == "comment" and text.startswith("/*") and not text.endswith("*/"):
            raise SqlTextError("a /* comment is never closed", match.start())
        if kind in ("string", "qident", "blob"):
            opener = text[1] if kind == "blob" else text[0]
            if len(text) < (3 if kind == "blob" else 2) or not text.endswith(_CLOSERS[opener]):
                raise SqlTextError(
                    f"a quoted {'name' if kind == 'qident' else 'string'} is never closed", match.start()
                )
        tokens.append(Token(kind, text, match.start()))
    return tokens


def significant(tokens: Sequence[Token]) -> list[Token]:
    return [t for t in tokens if t.kind not in ("ws", "comment")]


def normalize_sql(sql: str) -> str:
    """One spelling: no comments, single spaces, words and quoted names lowercased, literals kept."""
    out = []
    for token in significant(tokenize(sql)):
        if token.kind == "word" or token.kind == "blob":
            out.append(token.lower)
        elif token.kind == "qident":
            out.append('"' + _unquote(token.text).lower().replace('"', '""') + '"')
        else:
            out.append(token.text)
    while out and out[-1] == ";":
        out.pop()
    return " ".join(out)


def _unquote(text: str) -> str:
    if text[0] == "[":
        return text[1:-1]
    quote = text[0]
    return text[1:-1].replace(quote * 2, quote)


def split_header(text: str) -> tuple[list[tuple[str, str, int]], int]:
    """``([(name, value, line), ...], first body line index)``: the ``-- name: value`` lines before the SQL.

    Plain comments and blank lines may sit among them; the header ends at the first line of SQL.
    """
    entries: list[tuple[str, str, int]] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("--"):
            return entries, index
        match = _HEADER_LINE.fullmatch(stripped)
        if match:
            name = match.group(1).replace(" ", "_")
            if " " in match.group(1) and name not in HEADER_NAMES:
                continue  # `-- fresh within: 6h` is a header line; `-- note this: ...` stays a comment
            entries.append((name, match.group(2).strip(), index + 1))
    return entries, len(lines)


def read_sql_facts(
    path: Path, name: str, rel: str, known_columns: Mapping[str, Sequence[str]] | None = None
) -> AssetFacts:
    """Facts of ``assets/**/<name>.sql``; static errors become problems on the returned facts."""
    problems: list[Problem] = []

    def add(code: str, message: str, hint: str, line: int | None, **extra: Any) -> None:
        where = f"{rel} line {line}" if line else rel
        problems.append(problem(code, f"{where}: {message}", hint, asset=name, file=rel, line=line, **extra))

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        add(
            "ASSET_INVALID",
            f"cannot be read as UTF-8 text ({type(err).__name__})",
            "save the file as UTF-8",
            None,
        )
        return AssetFacts(name=name, kind="sql", path=path, rel=rel, problems=tuple(problems))
    entries, body_index = split_header(text)
    header = _read_header(entries, add)
    body_line = body_index + 1
    body_text = "\n".join(text.splitlines()[body_index:])
    statement: str | None = None
    inputs: tuple[str, ...] = ()
    try:
        statement = _one_select(body_text, body_line, add)
    except SqlTextError as err:
        add(
            "SQL_ERROR",
            f"{err}",
            "close it, or remove the stray quote",
            body_line + body_text.count("\n", 0, err.start),
        )
    if statement is not None:
        found, error = sql_inputs(statement, known_columns)
        inputs = found
        if error:
            code, message = error
            hint = (
                "a SQL asset only reads: one SELECT over other assets' tables"
                if code == "SQL_NOT_SELECT"
                else "fix the SQL; `croft preview` shows the result once it compiles"
            )
            add(code, message, hint, body_line)
    return AssetFacts(
        name=name,
        kind="sql",
        path=path,
        rel=rel,
        inputs=inputs,
        key=header.get("key", ()),
        checks=header.get("check", ()),
        description=header.get("description"),
        timeout_s=_timeout(header.get("timeout"), add, header.get("timeout_line")),
        max_runtime_s=_max_runtime(header.get("max_runtime"), add, header.get("max_runtime_line")),
        pool=_pool(header.get("pool"), add, header.get("pool_line")),
        sql=statement,
        **_alerts(header, add),
        problems=tuple(problems),
    )


def _alerts(header: dict[str, Any], add: Any) -> dict[str, Any]:
    """``-- notify after: 3``, ``-- notify remind: 2h``, ``-- run ping: URL``, ``-- fresh within: 6h``,
    ``-- slow after: 10m``, the same rules (``rules``) as the decorator's keywords and croft.json's."""

    out: dict[str, Any] = {}
    for name in sorted(ALERT_HEADERS & set(header)):
        value, line = header[name], header.get(f"{name}_line")
        spoken = name.replace("_", " ")
        if name == "notify_after":
            number: Any = int(value) if value.isdigit() else value
            why = bound_problem("notify.after", number)
            if not why:
                out["notify_after"] = number
        elif name == "notify_remind":
            why = remind_problem(value)
            if not why:
                out["notify_remind_s"] = remind_seconds(value)
        elif name == "run_ping":
            why = url_or_env_problem(value)
            if not why:
                out["run_ping"] = value
        else:
            why = bound_problem(name, value)
            if not why:
                out[f"{name}_s"] = parse_seconds(value, bare_text=False)
        if why:
            add(
                "ASSET_INVALID",
                f"`-- {spoken}: {clip(value)}` {why}",
                "`croft docs notifications` shows each alert option with an example",
                line,
            )
    return out


def _timeout(value: str | None, add: Any, line: int | None) -> float:
    """``-- timeout: 30s`` read by the same duration rule as a Python asset's ``timeout=``."""

    if value is None:
        return DEFAULT_TIMEOUT_S
    why = bound_problem("timeout", value)
    if why:
        add(
            "ASSET_INVALID",
            f"`-- timeout: {clip(value)}` {why}",
            'e.g. `-- timeout: 10m`, "90s" or 600',
            line,
        )
        return DEFAULT_TIMEOUT_S
    return parse_duration(value) or DEFAULT_TIMEOUT_S


def _max_runtime(value: str | None, add: Any, line: int | None) -> float | None:
    """``-- max_runtime: 30m``: the scheduled run's ceiling, by the one rule (``bounds.max_runtime_problem``)."""

    if value is None:
        return None
    why = max_runtime_problem(value)
    if why:
        add(
            "ASSET_INVALID",
            f"`-- max_runtime: {clip(value)}` {why}",
            'e.g. `-- max_runtime: 30m` or "2h"',
            line,
        )
        return None
    return parse_duration(value)


def _pool(value: str | None, add: Any, line: int | None) -> str | None:
    """``-- pool: stripe``: the pool its scheduled runs wait for, by the one rule (``bounds.pool_problem``)."""
    if value is None:
        return None
    why = pool_problem(value)
    if why:
        add("ASSET_INVALID", f"`-- pool: {clip(value)}`: {why}", "e.g. `-- pool: stripe`", line)
        return None
    return value


def _read_header(entries: list[tuple[str, str, int]], add: Any) -> dict[str, Any]:
    header: dict[str, Any] = {}
    for name, value, line in entries:
        if name in SCHEDULE_HEADERS:
            add(
                "ASSET_INVALID",
                f"`-- {name}:` cannot apply: a SQL asset is a transform, which runs after its inputs and has"
                " no schedule of its own",
                f'give the ingest it reads {name}= (or croft.json a "{name}" for every ingest);'
                " `croft docs scheduling` shows how",
                line,
            )
            continue
        if name not in HEADER_NAMES:
            close = nearest(name, HEADER_NAMES, cutoff=0.5)
            hint = (
                (f"did you mean `-- {close}:`? " if close else "")
                + "header lines: "
                + ", ".join(f"-- {h}:" for h in HEADER_NAMES)
            )
            add(
                "HEADER_UNKNOWN_KEY",
                f"unknown header line `-- {name}:`",
                hint,
                line,
                suggestion=f"-- {close}: {value}" if close else None,
            )
            continue
        if not value:
            add(
                "ASSET_INVALID",
                f"`-- {name}:` has no value",
                f"write it as `-- {name}: ...` or remove the line",
                line,
            )
            continue
        if name in REPEATABLE:
            header[name] = (*header.get(name, ()), value)
        elif name in header:
            add("ASSET_INVALID", f"`-- {name}:` is given twice", f"keep one `-- {name}:` line", line)
        elif name == "key":
            header["key"] = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
        elif name in ("timeout", "max_runtime") or name in ALERT_HEADERS:
            header[name], header[f"{name}_line"] = value, line
        else:
            header[name] = value
    return header


def _one_select(body: str, first_line: int, add: Any) -> str | None:
    """The text of the one statement in ``body`` (no trailing ``;``), or None after recording why not."""
    tokens = tokenize(body)
    statements: list[list[Token]] = [[]]
    for token in significant(tokens):
        if token.kind == "op" and token.text == ";":
            statements.append([])
        else:
            statements[-1].append(token)
    statements = [s for s in statements if s]
    if not statements:
        add(
            "SQL_NOT_SELECT",
            "has no SELECT after its header",
            "add one SELECT over other assets' tables",
            None,
        )
        return None
    if len(statements) > 1:
        second = statements[1][0]
        add(
            "SQL_NOT_ONE_STATEMENT",
            f"holds {len(statements)} statements; a SQL asset is exactly one SELECT",
            "keep one SELECT (use WITH ... AS (...) for steps) and put other tables in their own files",
            first_line + body.count("\n", 0, second.start),
        )
        return None
    statement = statements[0]
    if statement[0].lower not in ("select", "with", "values"):
        add(
            "SQL_NOT_SELECT",
            f"starts with {statement[0].text.upper()}; a SQL asset is one SELECT",
            "croft writes the table itself: write only the SELECT that produces its rows",
            first_line + body.count("\n", 0, statement[0].start),
        )
        return None
    return body[statement[0].start : statement[-1].start + len(statement[-1].text)]


def sql_inputs(
    select: str, known_columns: Mapping[str, Sequence[str]] | None = None
) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    """``(tables the SELECT reads, (code, message) or None)`` by compiling it against stub tables.

    ``known_columns`` (real schemas from the warehouse) seeds the stubs, so fewer guesses are needed. Where a
    column had to be guessed into a stub, a compile error that remains is not reported: the tables are known
    by then, and the real compile at run time reports it against the real schema.
    """
    known = {k.lower(): list(v) for k, v in (known_columns or {}).items()}
    stubs: dict[str, list[str]] = {}
    functions: set[str] = set()
    guesses = _Guesses(stubs)
    aliases = _aliases(select)
    seen_states: set[str] = set()
    reads: set[str] = set()
    error: tuple[str, str] | None = None
    for _ in range(MAX_ROUNDS):
        state = repr((sorted(stubs.items()), sorted(functions)))
        if state in seen_states:
            break
        seen_states.add(state)
        message, denied, round_reads = _compile(select, stubs, functions)
        reads |= round_reads
        if message is None:
            break
        if denied:
            error = ("SQL_NOT_SELECT", f"may only read, but asks to {denied[0]}")
            break
        table = _said(message, "no such table: ", r"(?:(?i:main|temp)\.)?(.+)")
        column = _said(message, "no such column: ", r"(?:(.+)\.)?([^.]+)")
        ambiguous = _said(message, "ambiguous column name: ", r"(?:.+\.)?([^.]+)")
        using = _said(message, "cannot join using column ", r"(.+) - column not present in both tables")
        function = _said(message, "no such function: ", r"(.+)")
        if table and "." not in table.group(1):
            name = table.group(1).lower()
            stubs[name] = list(dict.fromkeys(known.get(name) or [STUB_COLUMN]))
        elif table:
            error = ("SQL_ERROR", f"reads {table.group(1)}, which is not a table croft can see ({message})")
            break
        elif function:
            functions.add(function.group(1).lower())
        elif using:
            for columns in stubs.values():
                _add(columns, using.group(1))
        elif column and column.group(1):
            _place_qualified(column.group(1), column.group(2), stubs, aliases)
        elif column:
            if not guesses.add(column.group(2)):
                break
        elif ambiguous:
            if not guesses.move(ambiguous.group(1)):
                break
        elif guesses.ever:  # perhaps a wrong guess (an outer column inside an aggregate): try another
            if not guesses.move():
                break
        else:
            error = ("SQL_ERROR", f"SQLite cannot compile it: {message}")
            break
    names = {n for n in (set(stubs) | reads) if not n.startswith("sqlite_")}
    return tuple(sorted(names)), error


def _said(message: str, head: str, rest: str) -> re.Match[str] | None:
    """``re.fullmatch(head + rest, message)``, with the pattern compiled only for a message that begins with
    ``head`` (plain text): ``croft status`` reads every SQL file, and five patterns compiled for each of its
    processes cost more than reading a file."""
    return re.fullmatch(head + rest, message) if message.startswith(head) else None


class _Guesses:
    """Where unqualified missing columns were put. Stubs are tried last-found first (inner scopes see
    outer tables, not the reverse); "no such column" again adds the column to the next stub too, while an
    ambiguity or another error moves the latest guess on."""

    def __init__(self, stubs: dict[str, list[str]]):
        self.stubs = stubs
        self.where: dict[str, list[str]] = {}
        self.order: list[str] = []
        self.ever = False

    def _after(self, table: str | None, column: str) -> str | None:
        names = list(reversed(self.stubs))
        start = names.index(table) + 1 if table in names else 0
        return next((n for n in names[start:] if not _has(self.stubs[n], column)), None)

    def add(self, column: str) -> bool:
        key = column.lower()
        taken = self.where.setdefault(key, [])
        target = self._after(taken[-1] if taken else None, column)
        if target is None:
            return False
        self.stubs[target].append(column)
        taken.append(target)
        self.order.append(key)
        self.ever = True
        return True

    def move(self, column: str | None = None) -> bool:
        key = column.lower() if column else (self.order[-1] if self.order else None)
        if key is None or not self.where.get(key):
            return False
        current = self.where[key].pop()
        self.stubs[current] = [c for c in self.stubs[current] if c.lower() != key]
        target = self._after(current, key)
        if target is not None:
            self.stubs[target].append(key)
            self.where[key].append(target)
        elif not self.where[key]:
            self.order = [k for k in self.order if k != key]
        return True


def _has(columns: list[str], column: str) -> bool:
    return column.lower() in (c.lower() for c in columns)


def _add(columns: list[str], column: str) -> None:
    if not _has(columns, column):
        columns.append(column)


def _compile(
    select: str, stubs: dict[str, list[str]], functions: set[str]
) -> tuple[str | None, list[str], set[str]]:
    """Compile (never run) ``select`` against ``stubs``: (error or None, denied actions, tables read)."""
    denied: list[str] = []
    reads: set[str] = set()

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
        if read_only_denies(action, arg2):
            what = ACTION_NAMES.get(action, f"action {action}")
            denied.append(
                f"call {arg2}()"
                if action == sqlite3.SQLITE_FUNCTION
                else " ".join(x for x in (what, arg1) if x)
            )
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_READ and arg1:
            reads.add(arg1.lower())
        return sqlite3.SQLITE_OK

    conn = sqlite3.connect(":memory:")
    try:
        for table, columns in stubs.items():
            conn.execute(f"CREATE TABLE {_quote(table)} ({', '.join(_quote(c) for c in columns)})")
        for name in functions:
            conn.create_function(name, -1, _stub_function)
        conn.set_authorizer(authorize)
        try:
            conn.execute("EXPLAIN " + select)
        except sqlite3.Error as err:
            return str(err), denied, reads
        except sqlite3.Warning as err:  # "You can only execute one statement at a time."
            return str(err), denied, reads
        return None, denied, reads
    finally:
        conn.close()


def _stub_function(*_args: Any) -> None:
    return None


def _place_qualified(
    qualifier: str, column: str, stubs: dict[str, list[str]], aliases: dict[str, str]
) -> None:
    """``x.col`` is missing: add it to table ``x``, to the table alias ``x`` names, or else to every stub."""
    target = qualifier.lower()
    target = target if target in stubs else aliases.get(target, target)
    for owner in [target] if target in stubs else list(stubs):
        _add(stubs[owner], column)


def _aliases(select: str) -> dict[str, str]:
    """``alias -> table`` for ``FROM t a`` / ``JOIN t AS a`` (a best guess from tokens; only steers stubs)."""
    try:
        tokens = significant(tokenize(select))
    except SqlTextError:
        return {}
    out: dict[str, str] = {}
    for i, token in enumerate(tokens[:-1]):
        if token.lower not in ("from", "join") and token.text != ",":
            continue
        j = i + 1
        if tokens[j].kind not in ("word", "qident"):
            continue
        table = _ident(tokens[j])
        if j + 2 < len(tokens) and tokens[j + 1].text == ".":
            j += 2
            table = _ident(tokens[j])
        j += 1
        if j < len(tokens) and tokens[j].lower == "as":
            j += 1
        if j < len(tokens) and tokens[j].kind in ("word", "qident") and tokens[j].lower not in _NOT_ALIAS:
            out[_ident(tokens[j])] = table
    return out


def _ident(token: Token) -> str:
    return (_unquote(token.text) if token.kind == "qident" else token.text).lower()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
