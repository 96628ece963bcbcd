"""An asset's page: what it is and whether it is OK, from ``snapshot.asset_page`` alone. Its kind and
description, schedule in words and cron with the next three fires, its state (a hold with the command
that releases it), its freshness promise and age, rows and columns, what it reads and what reads it,
a small chart of its recent runs, and its attempts (filtered by result and trigger), each with its
own log, collapsed but the newest (or the one chosen)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from croft.core.clock import parse_instant
from croft.core.duration import words
from croft.history.runs import started_by_words
from croft.ui.derived import derived_state, duration_s
from croft.ui.html import e, nav, prose, result_class, shell, url, when, zone_of
from croft.ui.page import notices_html, problems_html, run_confirm_text, scheduling_words

__all__ = ["asset_html", "runs_chart"]

CHART_RUNS = 30
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))( ?)")


def _dl(items: list[tuple[str, str]]) -> str:
    return "<dl class=facts>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in items if v) + "</dl>"


def _links(root: str, names: list[str], none: str) -> str:
    if not names:
        return f"<span class=none>{e(none)}</span>"
    return ", ".join(f'<a href="{url("/asset", project=root, asset=n)}">{e(n)}</a>' for n in names)


def runs_chart(attempts: list[dict[str, Any]], now: datetime, zone: Any) -> str:
    """Its recent runs, oldest left: how long each took (bars, coloured by result) and the rows it
    wrote (a line of dots), each on its own scale; a skipped attempt is left out (it took nothing)."""
    shown = [a for a in attempts if a["status"] != "skipped"][:CHART_RUNS][::-1]
    if not shown:
        return "<p class=none>no run to chart yet</p>"
    width, height, step = 360, 60, 12
    lengths = [duration_s(a, now) or 0.0 for a in shown]
    rows = [
        sum(v or 0 for k, v in (a.get("rows") or {}).items() if k in ("added", "updated", "deleted"))
        for a in shown
    ]
    top_len, top_rows = max(lengths) or 1.0, max(rows) or 1
    parts = []
    for i, (a, length, n) in enumerate(zip(shown, lengths, rows, strict=True)):
        h = max(2.0, (height - 14) * length / top_len)
        x = i * step
        title = f"{a['startedAt']} · {a['status']} · {words(length)} · {n} rows written"
        parts.append(
            f'<rect class="bar {result_class(a["status"])}" x="{x}" y="{height - h:.1f}"'
            f' width="{step - 3}" height="{h:.1f}" data-seconds="{length:.3f}"><title>{e(title)}</title></rect>'
        )
        y = height - 4 - (height - 14) * n / top_rows
        parts.append(f'<circle class=rowdot cx="{x + (step - 3) / 2:.1f}" cy="{y:.1f}" r=2></circle>')
    said = f"the last {len(shown)} runs: longest {words(top_len)}, most rows written {top_rows}"
    return (
        f'<figure class=chart><svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role=img'
        f' aria-label="{e(said)}">{"".join(parts)}</svg><figcaption>bars: how long each run took'
        f" (longest {e(words(top_len))}); dots: rows written (most {e(top_rows)})</figcaption></figure>"
    )


def _log(lines: list[str], truncated: bool, now: datetime, zone: Any) -> str:
    out = []
    for line in lines:
        m = _STAMP.match(line)
        if m:
            out.append(f"{when(m.group(1), now, zone, age=False)}{m.group(2)}{e(line[m.end() :])}")
        else:
            out.append(e(line))
    cut = "<p class=hint>(the last lines only)</p>" if truncated else ""
    body = "\n".join(out) if out else "(this attempt wrote no log)"
    return f"{cut}<pre class=log>{body}</pre>"


def _attempts(page: dict[str, Any], now: datetime, zone: Any) -> str:
    root, asset = page["root"], page["asset"]
    chosen = page.get("chosen")
    rows = []
    opened = False
    for a in page["attempts"]:
        key = f"{a['runId']}#{a['attempt']}"
        length = duration_s(a, now)
        err = a.get("error") or {}
        result = a["status"]
        why = prose(err.get("message") or (a.get("reason") if result == "skipped" else ""), now, zone)
        log = page["logs"].get(key)
        is_open = (chosen == a["runId"]) if chosen else not opened
        opened = opened or is_open
        head = (
            f'<summary><span class="result {result_class(result)}">{e(result)}</span> '
            f"{when(a['startedAt'], now, zone)} · attempt {e(a['attempt'])}"
            f" · {e(words(length) if length is not None and result != 'skipped' else '-')}"
            f" · {started_by_words(a.get('trigger'))}"
            + (f" <span class=why>{why}</span>" if why else "")
            + "</summary>"
            f'<p class=runref>run <a href="{url("/asset", project=root, asset=asset, run=a["runId"])}">'
            f"{e(a['runId'])}</a></p>"
        )
        body = (
            _log(log["lines"], log["truncated"], now, zone)
            if log
            else "<p class=hint>its log: open the run's link</p>"
        )
        rows.append(
            f'<details class=attempt data-run="{e(a["runId"])}" data-status="{e(result)}"'
            f"{' open' if is_open else ''}>{head}{body}</details>"
        )
    if not rows:
        return (
            "<p class=none>no attempt matches</p>"
            if any(page["filters"].values())
            else "<p class=none>no run yet</p>"
        )
    return "".join(rows)


def _filters(page: dict[str, Any]) -> str:
    f = page["filters"]

    def select(name: str, label: str, options: list[tuple[str, str]]) -> str:
        opts = "".join(
            f'<option value="{e(v)}"{" selected" if f.get(name) == v else ""}>{e(t)}</option>'
            for v, t in options
        )
        return f'<label>{e(label)} <select name="{e(name)}">{opts}</select></label>'

    return (
        '<form method=get action="/asset" class=filters>'
        f'<input type=hidden name=project value="{e(page["root"])}"><input type=hidden name=asset value="{e(page["asset"])}">'
        + select(
            "result", "result", [("", "any"), ("failed", "failed"), ("ok", "ok"), ("skipped", "skipped")]
        )
        + select(
            "trigger",
            "started",
            [
                ("", "by anyone"),
                ("schedule", "by the scheduler"),
                ("manual", "by hand"),
                ("agent", "by an agent"),
                ("dagster", "by Dagster"),
            ],
        )
        + "<button type=submit>Show</button></form>"
    )


def _schedule(page: dict[str, Any], now: datetime, zone: Any) -> str:
    entry = page["entry"]
    sched = entry.get("schedule") or {}
    setting = page.get("scheduling") or {}
    state = setting.get("effective") or setting.get("state", "off")
    if sched.get("schedule"):
        text = f"{e(sched['schedule'])} <span class=hint>(<code>{e(sched.get('cron'))}</code>, {e(page['timezone'])})</span>"
    else:
        text = (
            "<span class=none>"
            + ("after its inputs" if entry["kind"] != "ingest" else "by hand only")
            + "</span>"
        )
    fires = page.get("fires") or []
    if not fires:
        upcoming = "<span class=none>none planned</span>"
    elif state == "off":
        upcoming = "<span class=none>none while scheduling is off</span>"
    else:
        upcoming = ", ".join(when(f, now, zone) for f in fires)
        if state == "paused":
            upcoming = f"scheduling {scheduling_words(setting, now, zone)}; then {upcoming}"
    return _dl([("schedule", text), ("next fires", upcoming)])


def _freshness(page: dict[str, Any], now: datetime, zone: Any) -> str:
    entry, fresh = page["entry"], page.get("freshness")
    items = [
        ("last loaded", when(entry.get("lastLoadedAt"), now, zone) if entry.get("lastLoadedAt") else "never")
    ]
    if fresh:
        age = fresh.get("ageSeconds")
        promise = f"fresh within {e(fresh.get('within'))}"
        standing = (
            "<span class=s-failed>older than promised</span>"
            if fresh.get("breached")
            else "<span class=s-ok>kept</span>"
        )
        detail = f"{promise}: {standing}" + (f", data {e(words(age))} old" if age is not None else "")
        cause = fresh.get("cause")
        if cause:
            detail += f" because {prose(cause.get('text'), now, zone)} (<code>{e(cause.get('fix'))}</code>)"
        items.append(("freshness", detail))
    else:
        items.append(("freshness", "<span class=none>no promise (<code>fresh_within</code>)</span>"))
    rows = entry.get("rows")
    items.append(("rows", e(rows) if rows is not None else "<span class=none>no table yet</span>"))
    cols = page.get("columns") or []
    items.append(
        (
            "columns",
            ", ".join(f"<code>{e(c['name'])}</code> <span class=hint>{e(c['type'])}</span>" for c in cols)
            or "<span class=none>-</span>",
        )
    )
    return _dl(items)


def asset_html(page: dict[str, Any], csrf: str, notices: list[dict[str, Any]]) -> str:
    now = parse_instant(page["at"])
    zone = zone_of(page.get("timezone"))
    root, asset = page["root"], page["asset"]
    run_button = (
        f'<a class="button run" href="{url("/confirm", project=root, asset=asset)}" data-project="{e(root)}"'
        f' data-asset="{e(asset)}" data-confirm="{e(run_confirm_text(asset))}">Run now</a>'
    )
    top = (
        f"<header class=top><h1>{e(asset)}</h1>{nav('asset')}{run_button}"
        f"<span class=at>as of {when(page['at'], now, zone, age=False)}</span></header>"
    )
    if page.get("problem"):
        return shell(f"croft · {asset}", csrf, top + problems_html([page["problem"]], now, zone), "asset")
    entry = page["entry"]
    st = derived_state(entry, [], root, now)
    state = (
        f'<p class="state big" data-mark="{e(st["mark"])}"><span class="mark m-{e(st["mark"])}" aria-hidden=true></span>'
        f"<strong class=label>{e(st['label'])}</strong>"
        + (f" <span class=detail>{prose(st['detail'], now, zone)}</span>" if st["detail"] else "")
        + (
            f" <span class=release>release: <code class=command>{e(st['command'])}</code></span>"
            if st["command"]
            else ""
        )
        + "</p>"
    )
    what = _dl(
        [
            ("what", e(entry.get("description")) or "<span class=none>no description</span>"),
            ("kind", f"{e(entry['kind'])} <span class=hint>{e(entry.get('file'))}</span>"),
            (
                "reads",
                _links(
                    root,
                    page["reads"],
                    "nothing: it pulls from outside" if entry["kind"] == "ingest" else "-",
                ),
            ),
            ("read by", _links(root, page["readBy"], "nothing yet")),
        ]
    )
    history_problem = (
        problems_html([{"problems": [page["historyProblem"]]}], now, zone)
        if page.get("historyProblem")
        else ""
    )
    body = (
        f"{state}<div class=cols><section aria-labelledby=h-what><h2 id=h-what>What it is</h2>{what}</section>"
        f"<section aria-labelledby=h-when><h2 id=h-when>When it runs</h2>{_schedule(page, now, zone)}</section>"
        f"<section aria-labelledby=h-data><h2 id=h-data>Its data</h2>{_freshness(page, now, zone)}</section></div>"
        f"<section aria-labelledby=h-chart><h2 id=h-chart>Recent runs</h2>{runs_chart(page['attempts'], now, zone)}</section>"
        f"<section aria-labelledby=h-runs><h2 id=h-runs>Attempts</h2>{_filters(page)}{history_problem}"
        f"{_attempts(page, now, zone)}</section>"
    )
    return shell(f"croft · {asset}", csrf, top + notices_html(notices) + body, "asset")
