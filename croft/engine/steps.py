"""Run one asset once: load its code, extract, and write (or, for a preview, write and roll back).

The write itself (modes, diffs, cursor, checks) belongs to the warehouse; this module wires asset code,
its ctx and the warehouse together and reports what happened as a plain dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from croft.core import clock
from croft.core.clock import now
from croft.core.problems import CroftError
from croft.engine.backfill import run_chunks
from croft.engine.checks import read_only
from croft.engine.context import IngestContext, LazyHttp, StepLog, TransformContext
from croft.engine.cursor import since_for
from croft.engine.extract import Extraction
from croft.engine.http import HttpClient
from croft.engine.loader import code_error, load_asset_function
from croft.engine.sandbox import step_guard
from croft.engine.sqlclock import sql_deadline
from croft.engine.tablehealth import lost_rows, seen_in, table_problem
from croft.engine.warehouse import Warehouse
from croft.engine.window import since_at
from croft.project.asset import AssetFacts
from croft.project.config import Project
from croft.project.rules import resolved_write_mode

__all__ = ["StepInput", "execute", "write_mode"]

SAMPLE_ROWS = 10  # rows a preview shows


@dataclass
class StepInput:
    project: Project
    facts: AssetFacts
    run_id: str
    attempt: int
    code_hash: str | None
    log: StepLog
    warehouse: Any
    preview: bool = False
    refill: Any = None  # engine.window.Refill: a full refresh or a backfill of this ingest
    book: Any = None  # engine.backfill.Book: a backfill's chunks done so far (runs.sqlite)
    on_chunk: Any = None  # called after each committed chunk (the command's progress)


def write_mode(facts: AssetFacts) -> str:
    """The mode by the one write-mode rule (``project.rules``) that validate applies too."""

    return resolved_write_mode(facts.write, facts.key, bool(facts.incremental), facts.name)


def execute(step: StepInput) -> dict[str, Any]:

    with step_guard(step.log):  # asset output goes to the step log; os._exit cannot end croft
        if step.facts.kind == "ingest":
            if step.refill is not None and step.refill.window is not None:
                return run_chunks(step, lambda window: _ingest(step, window))
            return _ingest(step)
        if step.facts.kind == "sql":
            return _sql(step)
        return _python_transform(step)


def _write_options(step: StepInput, *, inputs: bool) -> dict[str, Any]:
    """What every warehouse write is told: the asset's key and checks, who writes, when, and whether to keep it."""
    facts = step.facts
    options: dict[str, Any] = {
        "key": list(facts.key),
        "checks": list(facts.checks),
        "run_id": step.run_id,
        "attempt": step.attempt,
        "code_hash": step.code_hash,
        "now": now(),
        "commit": not step.preview,
    }
    if inputs:
        options["inputs"] = list(facts.inputs)
    return options


def _check_secrets(step: StepInput) -> None:
    env = step.project.env
    missing = [name for name in step.facts.secrets if not env.get(name)]
    if missing:
        names = ", ".join(missing)
        raise CroftError(
            "SECRET_MISSING",
            f"{step.facts.name} declares secret(s) {names}, missing from .env and the environment",
            f"Add {missing[0]}=... to {step.project.root / '.env'} (git-ignored; values are never printed).",
            asset=step.facts.name,
            details={"missing": missing},
        )


def _lost_table(step: StepInput, state: dict[str, Any], incremental: dict[str, Any]) -> None:
    """An incremental ingest whose table was dropped or emptied outside croft refuses to run from its
    old cursor: it would load only the newest rows and lose the rest (``engine.tablehealth``)."""

    if not incremental or state.get("cursor_value") is None:
        return
    name = step.facts.name
    entry = {"rows": state.get("row_count"), "cursor": {"value": state.get("cursor_value")}}
    found = table_problem(name, "ingest", True, entry, seen_in(step.warehouse.conn, name))
    if lost_rows(found):
        assert found is not None
        raise CroftError(found.with_(severity="error"))


def _since(step: StepInput, state: dict[str, Any], incremental: dict[str, Any], window: Any) -> Any:
    """``ctx.since``: nothing for a full refresh, a backfill window's start, else the saved cursor."""

    if not incremental or (step.refill is not None and step.refill.full_refresh):
        return None
    if window is not None:
        unit = incremental.get("unit") or state.get("cursor_unit")
        return since_at(window.start, state.get("cursor_type"), unit)
    return since_for(
        state.get("cursor_value"),
        incremental,
        keyed=bool(step.facts.key),
        cursor_type=state.get("cursor_type"),
    )


def _ingest(step: StepInput, window: Any = None) -> dict[str, Any]:
    facts = step.facts
    _check_secrets(step)
    state = step.warehouse.state(facts.name) or {}
    incremental = facts.incremental or {}
    full = step.refill is not None and step.refill.full_refresh
    if not full:
        _lost_table(step, state, incremental)
    since = _since(step, state, incremental, window)
    func = load_asset_function(step.project.root, facts.name, facts.path)
    extraction = Extraction(facts.name, facts.timeout_s)
    http = LazyHttp(
        lambda: _http_client(step, extraction.progress)
    )  # built on first use of ctx.http: no httpx import otherwise
    ctx = IngestContext(
        asset=facts.name,
        run_id=step.run_id,
        log=step.log,
        preview=step.preview,
        http=http,
        since=since,
        declared=facts.secrets,
        env=step.project.env,
        window=window,
    )
    if full:
        step.log(f"{facts.name}: full refresh: fetching everything from the source's beginning")
    elif window is not None:
        step.log(f"{facts.name}: fetching the window {window} (since {since})")
    else:
        step.log(f"{facts.name}: {_fetching(incremental, since)}")
    sample: list[Any] = []
    batches = _rows(step, extraction, lambda: func(ctx), sample, "fetching rows")
    try:  # rows stream into the warehouse's stage as they arrive
        result = step.warehouse.write_ingest(
            facts.name,
            batches,
            mode=write_mode(facts),
            cursor_field=incremental.get("field"),
            cursor_unit=incremental.get("unit"),
            full_refresh=full,
            **_write_options(step, inputs=False),
        )
    finally:
        http.close()
    requests = http.requests
    step.log(f"{facts.name}: {_count(result.rows_in, 'row')} from {_count(requests, 'request')}; written")
    return {**_counts(result), "requests": requests, "since": since, "rows": sample}


def _fetching(incremental: dict[str, Any], since: Any) -> str:
    """An incremental ingest says where it starts (or that this is its first run); a full one just fetches."""
    if not incremental:
        return "fetching"
    return f"fetching since {since}" if since is not None else "fetching (first run: no cursor yet)"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _http_client(step: StepInput, on_progress: Any) -> Any:

    return HttpClient(
        redactor=step.project.redactor,
        log=step.log,
        on_progress=on_progress,
        sleep=lambda seconds: clock.pause(seconds),
    )


def _rows(step: StepInput, extraction: Extraction, produce: Any, sample: list[Any], doing: str) -> Any:
    """The asset code's rows as a stream for the warehouse: its errors point at the user's own line, and a
    preview keeps the first rows as its sample."""
    name, root = step.facts.name, step.project.root
    return extraction.stream(
        produce, lambda exc: code_error(exc, name, root, doing), sample if step.preview else None, SAMPLE_ROWS
    )


def _sql(step: StepInput) -> dict[str, Any]:
    facts = step.facts
    assert facts.sql is not None
    with sql_deadline(step.warehouse.conn, facts.timeout_s, facts.name):  # a runaway query is TIMEOUT
        result = step.warehouse.write_transform_sql(
            facts.name, facts.sql, **_write_options(step, inputs=True)
        )
        done = _counts(result)
        if step.preview:
            done["rows"] = _sample(step.warehouse.conn, facts.sql)
    return done


def _sample(conn: Any, sql: str, limit: int = 10) -> list[dict[str, Any]]:
    """The first rows a SQL transform would build, read under the same read-only guard as its write."""

    with read_only(conn):
        cursor = conn.execute(f"SELECT * FROM ({sql}) LIMIT {limit}")
    names = [d[0] for d in cursor.description]
    return [
        {k: v for k, v in zip(names, row, strict=True) if k not in ("_loaded_at", "_row_hash")}
        for row in cursor.fetchall()
    ]


def _python_transform(step: StepInput) -> dict[str, Any]:
    facts = step.facts
    func = load_asset_function(step.project.root, facts.name, facts.path)
    reader_path: Path = step.warehouse.path
    # The versions as they are before the code reads them: a change that lands while it runs leaves the
    # transform stale, instead of being recorded as seen.
    seen = {name: step.warehouse.version(name) for name in facts.inputs}

    def read(name: str) -> Any:

        reader = Warehouse(reader_path)
        try:
            yield from reader.read_rows(name)
        finally:
            reader.close()

    ctx = TransformContext(
        asset=facts.name,
        run_id=step.run_id,
        log=step.log,
        preview=step.preview,
        inputs=facts.inputs,
        read=read,
    )
    extraction = Extraction(facts.name, facts.timeout_s)
    sample: list[Any] = []
    batches = _rows(step, extraction, lambda: func(ctx), sample, "building rows")
    options = {**_write_options(step, inputs=False), "inputs": seen}
    result = step.warehouse.write_transform_rows(facts.name, batches, **options)
    return {**_counts(result), "rows": sample}


def _counts(result: Any) -> dict[str, Any]:
    return {
        "rowsIn": result.rows_in,
        "added": result.added,
        "updated": result.updated,
        "unchanged": result.unchanged,
        "deleted": result.deleted,
        "cursorBefore": result.cursor_before,
        "cursorAfter": result.cursor_after,
        "changed": result.changed,
    }
