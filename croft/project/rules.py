"""Every static rule an asset must pass, in one table that ``croft validate`` and ``croft run`` both apply.

Discovery runs :func:`static_problems` on each asset's facts, so a rule broken here is on the facts
``validate`` prints and the facts a run refuses to execute (before any data is touched). The engine's own
last-moment checks (``writespec.resolve_mode``, ``key_tuple``, ``parse_checks``, ``cursor.parse_lookback``)
call the same functions, so the two can never disagree.

``RULES`` also lists the rules the readers enforce while parsing (names, decorators, async functions,
SQL headers), each with an example of a bad asset, so a test can generate one bad asset per rule and
check that validate and run both refuse it with the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from croft.core.problems import CroftError, Problem, problem
from croft.project.bounds import bound_problem, pool_problem
from croft.project.checkspec import is_identifier, parse_check
from croft.schedule.quiet import window_problem

if TYPE_CHECKING:
    from typing import Any

    from croft.project.asset import AssetFacts

__all__ = [
    "LOCAL_PACKAGES",
    "MAX_NAME_LENGTH",
    "RULES",
    "Rule",
    "lookback_problem",
    "pool_in_config",
    "quiet_problem",
    "resolved_write_mode",
    "static_problems",
    "write_mode_problem",
]

WRITE_MODES = ("replace", "append", "merge")
# The only top-level module name a run finds in the project root (``engine.loader``; assets themselves are
# loaded by path) and the only one the code fingerprint counts as the project's own: anything else in the
# root (a ``json.py`` a group member dropped there) is never imported.
LOCAL_PACKAGES = ("lib",)
# The longest asset name (``discovery.check_name``, the one name rule): the name is a table, a file name
# part (``<run id>.<name>.attempt<n>.log`` must stay under the 255 bytes a file name may have) and a word
# on every screen.
MAX_NAME_LENGTH = 64


@dataclass(frozen=True)
class Rule:
    """One static rule: the code it reports and a bad asset (file under assets/, its text) that breaks it."""

    name: str
    code: str
    file: str
    text: str


def _ingest(options: str, body: str = 'yield {"id": 1}', head: str = "def") -> str:
    return f"from croft import ingest\n\n\n@ingest({options})\n{head} rows(ctx):\n    {body}\n"


RULES: tuple[Rule, ...] = (
    Rule("name starts with sqlite_", "NAME_INVALID", "sqlite_stats.py", _ingest('key="id"')),
    Rule("name is an SQL keyword", "NAME_INVALID", "select.py", _ingest('key="id"')),
    Rule("name is too long", "NAME_INVALID", "a" * 65 + ".py", _ingest('key="id"')),
    Rule("key is not a column name", "ASSET_INVALID", "quoted_key.py", _ingest("key='\"id\"'")),
    Rule(
        "SQL key header is not a column name", "ASSET_INVALID", "quoted.sql", '-- key: "id"\nSELECT 1 AS id\n'
    ),
    Rule("malformed check", "ASSET_INVALID", "bad_check.py", _ingest('key="id", checks=["(amount > 0"]')),
    Rule(
        "malformed SQL check header",
        "ASSET_INVALID",
        "bad_check_sql.sql",
        "-- check: x > 0; drop\nSELECT 1 AS x\n",
    ),
    Rule("async def asset", "ASSET_INVALID", "later.py", _ingest('key="id"', head="async def")),
    Rule(
        "lookback is not a duration",
        "ASSET_INVALID",
        "dayz.py",
        _ingest('key="id", incremental={"field": "t", "lookback": "30 dayz"}'),
    ),
    Rule(
        "timeout is not a duration", "ASSET_INVALID", "slow.py", _ingest('key="id", timeout="10 mins please"')
    ),
    Rule(
        "bare decorator",
        "ASSET_INVALID",
        "bare.py",
        "from croft import transform\n\n\n@transform\ndef rows(ctx):\n    yield {}\n",
    ),
    Rule("merge without key", "ASSET_INVALID", "merge.py", _ingest('write="merge"')),
    Rule(
        "replace but incremental",
        "ASSET_INVALID",
        "repl.py",
        _ingest('key="id", incremental="t", write="replace"'),
    ),
    Rule("incremental without key", "INCREMENTAL_WITHOUT_KEY", "nokey.py", _ingest('incremental="t"')),
    Rule("unknown write mode", "ASSET_INVALID", "upsert.py", _ingest('key="id", write="upsert"')),
    Rule("unknown SQL header", "HEADER_UNKNOWN_KEY", "hdr.sql", "-- keys: id\nSELECT 1 AS id\n"),
    Rule(
        "SQL timeout is not a duration", "ASSET_INVALID", "slow_sql.sql", "-- timeout: soon\nSELECT 1 AS id\n"
    ),
    Rule(
        "max_runtime is not a duration",
        "ASSET_INVALID",
        "long.py",
        _ingest('key="id", max_runtime="a while"'),
    ),
    Rule(
        "SQL max_runtime is not a duration",
        "ASSET_INVALID",
        "long_sql.sql",
        "-- max_runtime: forever\nSELECT 1 AS id\n",
    ),
    Rule("pool is not a name", "ASSET_INVALID", "pooled.py", _ingest('key="id", pool="Stripe API"')),
    Rule("SQL pool is not a name", "ASSET_INVALID", "pooled_sql.sql", "-- pool: 42 things\nSELECT 1 AS id\n"),
    Rule("pool croft.json does not size", "CONFIG_INVALID", "unsized.py", _ingest('key="id", pool="stripe"')),
    # Out of range (BOUNDS): each once passed validate and then broke the run or the tick.
    Rule("timeout past its range", "ASSET_INVALID", "huge_timeout.py", _ingest('key="id", timeout=1e30')),
    Rule("timeout of zero", "ASSET_INVALID", "no_timeout.py", _ingest('key="id", timeout=0')),
    Rule("retries past its range", "ASSET_INVALID", "retry_forever.py", _ingest('key="id", retries=10**9')),
    Rule(
        "max_runtime past its range", "ASSET_INVALID", "ages.py", _ingest('key="id", max_runtime="9999 days"')
    ),
    Rule(
        "lookback past its range",
        "ASSET_INVALID",
        "deep_past.py",
        _ingest('key="id", incremental={"field": "t", "lookback": "99999999 days"}'),
    ),
    Rule("SQL timeout past its range", "ASSET_INVALID", "huge_sql.sql", "-- timeout: 1e30\nSELECT 1 AS id\n"),
    Rule(
        "SQL max_runtime past its range",
        "ASSET_INVALID",
        "ages_sql.sql",
        "-- max_runtime: 9999 days\nSELECT 1 AS id\n",
    ),
    # alerts (docs/notifications.md): the same rules as croft.json's notify keys
    Rule("notify_after of zero", "ASSET_INVALID", "never_told.py", _ingest('key="id", notify_after=0')),
    Rule(
        "notify_remind is not a duration",
        "ASSET_INVALID",
        "nag.py",
        _ingest('key="id", notify_remind="often"'),
    ),
    Rule("fresh_within without a unit", "ASSET_INVALID", "fresh.py", _ingest('key="id", fresh_within="6"')),
    Rule(
        "run_ping is neither a URL nor a name",
        "ASSET_INVALID",
        "pinged.py",
        _ingest('key="id", run_ping="ftp://x"'),
    ),
    Rule(
        "SQL fresh within past its range",
        "ASSET_INVALID",
        "old.sql",
        "-- fresh within: 9999 days\nSELECT 1 AS id\n",
    ),
    Rule("slow_after without a unit", "ASSET_INVALID", "sluggish.py", _ingest('key="id", slow_after="10"')),
    Rule(
        "SQL slow after past its range",
        "ASSET_INVALID",
        "sluggish.sql",
        "-- slow after: 30 days\nSELECT 1 AS id\n",
    ),
    Rule(
        "SQL notify after is not a number",
        "ASSET_INVALID",
        "after.sql",
        "-- notify after: soon\nSELECT 1 AS id\n",
    ),
)


def write_mode_problem(write: Any, key: Sequence[str], incremental: bool) -> tuple[str, str, str, str] | None:
    """The one write-mode rule: (code, option, message, hint) for a combination croft refuses, else None.

    No key → replace; key → replace by key; key + incremental → merge; append only when asked.
    """
    if write is not None and write not in WRITE_MODES:
        return (
            "ASSET_INVALID",
            "write",
            f"must be one of {', '.join(WRITE_MODES)}, not {write!r}",
            "omit it to let croft choose from key= and incremental=",
        )
    if write == "merge" and not key:
        return (
            "ASSET_INVALID",
            "write",
            '"merge" needs key= to know which rows match',
            'add key="id" (your unique column)',
        )
    if incremental and write == "replace":
        return (
            "ASSET_INVALID",
            "write",
            '"replace" rebuilds the table, so incremental= cannot apply',
            'drop write= (croft merges when there is a key) or use write="append"',
        )
    if incremental and not key and write != "append":
        return (
            "INCREMENTAL_WITHOUT_KEY",
            "incremental",
            "without key= would duplicate re-read rows",
            'add key="id" so re-read rows are merged, or say write="append" to keep every row',
        )
    return None


def resolved_write_mode(write: Any, key: Sequence[str], incremental: bool, asset: str) -> str:
    """The mode a write uses; raises the rule's problem for a combination croft refuses."""
    bad = write_mode_problem(write, key, incremental)
    if bad:
        code, option, message, hint = bad
        raise CroftError(code, f"{asset}: {option}= {message}", hint, asset=asset)
    if write:
        return str(write)
    return "merge" if key and incremental else "replace"


def quiet_problem(value: Any) -> str | None:
    """Why ``value`` is no list of quiet windows (croft.json's ``quiet``, an ingest's ``quiet=``), or None."""
    return window_problem(value)


def pool_in_config(asset: str, rel: str, pool: str | None, sizes: Mapping[str, int]) -> Problem | None:
    """CONFIG_INVALID when an asset names a pool its project's croft.json does not size: ``validate`` and
    ``run`` (through discovery) and the tick, which holds the asset, all ask here."""
    if pool is None:
        return None
    why = pool_problem(pool, sizes)
    if why is None:
        return None
    return problem(
        "CONFIG_INVALID",
        f"{rel}: {why}",
        f'add it to croft.json, e.g. "pools": {{"{pool}": 1}} (how many of its runs may go at once)',
        asset=asset,
        file="croft.json",
        details={"key": "pools", "pool": pool},
    )


def lookback_problem(lookback: Any) -> str | None:
    """Why an incremental ``lookback`` is not usable, or None (None itself means the default)."""
    if lookback is None:
        return None
    why = bound_problem("lookback", lookback)
    return f"lookback {why}" if why else None


def static_problems(facts: AssetFacts) -> list[Problem]:
    """Problems of the rules that need the whole of an asset's facts (the readers check the rest)."""
    found: list[Problem] = []

    def add(message: str, hint: str, code: str = "ASSET_INVALID") -> None:
        found.append(problem(code, f"{facts.rel}: {message}", hint, asset=facts.name, file=facts.rel))

    bad_keys = [k for k in facts.key if not is_identifier(k)]
    if bad_keys:
        add(
            f"key {', '.join(map(repr, bad_keys))} is not a column name",
            "a key names columns: letters, digits and underscores, without quotes",
        )
    for text in facts.checks:
        try:
            parse_check(text)
        except CroftError as exc:
            add(exc.problem.message, exc.problem.hint)
    incremental = facts.incremental or {}
    why = lookback_problem(incremental.get("lookback"))
    if why:
        add(why, 'write a lookback as a number and a unit, such as "30 days", "2h", "90 min" or "1s"')
    return found
