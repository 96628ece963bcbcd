"""The page as HTML, rendered from the JSON of ``snapshot`` and nothing else, on the server: it works
without JavaScript (it refreshes itself), and the shipped script only swaps in a fresh copy of the same
HTML when the server says something changed. Every value is escaped; no inline script or style is
emitted (the Content-Security-Policy would refuse them).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from html import escape
from typing import Any
from urllib.parse import urlencode

from croft.core.clock import parse_instant
from croft.core.duration import words
from croft.core.when import clock, moment, relative
from croft.ui.derived import FAILED, asset_steps, derived_state, duration_s

__all__ = ["asset_html", "confirm_html", "overview_html", "refused_html", "run_confirm_text"]

SPARK_RUNS = 20
REFRESH_S = 10  # without JavaScript the page reloads itself this often
TIMELINE_DAYS = 7


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _url(path: str, **query: Any) -> str:
    return _e(f"{path}?{urlencode({k: v for k, v in query.items() if v is not None})}")


def _result_class(status: str | None) -> str:
    if status in ("ok", "unchanged"):
        return "s-ok"
    if status in FAILED:
        return "s-failed"
    if status == "running":
        return "s-running"
    return "s-other"


def _page(title: str, csrf: str, body: str, page: str) -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title>"
        f'<meta name=csrf content="{_e(csrf)}">'
        '<link rel=icon href="data:,"><link rel=stylesheet href="/static/ui.css">'
        '<script src="/static/ui.js" defer></script>'
        f'<noscript><meta http-equiv=refresh content="{REFRESH_S}"></noscript>'
        f"</head><body data-page={_e(page)}>"
        f"<main id=live>{body}</main></body></html>\n"
    )


def _csrf_field(csrf: str) -> str:
    return f'<input type=hidden name=csrf value="{_e(csrf)}">'


def _button_form(action: str, label: str, csrf: str, root: str, back: str, cls: str) -> str:
    return (
        f'<form method=post action="{_e(action)}" class="action {_e(cls)}">{_csrf_field(csrf)}'
        f'<input type=hidden name=project value="{_e(root)}">'
        f'<input type=hidden name=back value="{_e(back)}">'
        f"<button type=submit>{_e(label)}</button></form>"
    )


def run_confirm_text(asset: str) -> str:
    """What Run now asks first: a run a person starts approves the code, as ``croft run`` says."""
    return (
        f"Run {asset} now? A run you start approves {asset}'s current code for the scheduler, as "
        f"`croft run {asset}` does."
    )


# -- the overview ------------------------------------------------------------------------------------


def _doctor_line(doctor: dict[str, Any]) -> str:
    checks = (doctor.get("data") or {}).get("checks") or []
    broken = [c for c in checks if not c.get("ok")]
    if not checks:
        first = (doctor.get("problems") or [{}])[0]
        return f'<span class="doctor bad">doctor: {_e(first.get("message", "could not check"))}</span>'
    warned = [c for c in checks if c.get("warning")]  # it holds, but a person would be told nothing
    if not broken and not warned:
        return f'<span class="doctor good">doctor: all {len(checks)} checks pass</span>'
    if not broken:
        first = warned[0]
        more = f" (and {len(warned) - 1} more)" if len(warned) > 1 else ""
        fix = f" · fix: <code>{_e(first['fix'])}</code>" if first.get("fix") else ""
        return f'<span class="doctor warn">doctor: ⚠ {_e(first["check"])}: {_e(first["detail"])}{more}{fix}</span>'
    first = broken[0]
    more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
    fix = f" · fix: <code>{_e(first['fix'])}</code>" if first.get("fix") else ""
    return f'<span class="doctor bad">doctor: {_e(first["check"])}: {_e(first["detail"])}{more}{fix}</span>'


def _queue_line(schedule: dict[str, Any]) -> str:
    queue = (schedule.get("data") or {}).get("queue")
    if not queue:
        return ""
    waiting = queue.get("waitingCount", 0)
    text = f"{queue.get('running', 0)} of {queue.get('cap', '?')} going, {waiting} waiting"
    return f'<span class=queue title="the per-user cap on scheduled runs">queue: {_e(text)}</span>'


def _setting_words(sched: dict[str, Any], now: datetime) -> str:
    state = sched.get("state", "off")
    if state == "paused":
        until = sched.get("pausedUntil")
        return f"paused until {moment(until, now)}" if until else "paused until croft schedule on"
    return str(state)


def _strip(project: dict[str, Any], now: datetime, csrf: str, back: str) -> str:
    schedule = project["schedule"]
    sched = (schedule.get("data") or {}).get("scheduling") or {}
    state = sched.get("state", "off")
    stale = next((p for p in schedule.get("problems") or [] if p.get("code") == "SCHEDULER_STALE"), None)
    beat = sched.get("lastTickAt")
    tick = f"last tick {moment(beat, now)}" if beat else "no tick yet"
    parts = [
        f"<h2>{_e(project['name'])}</h2>",
        f'<span class="setting" data-state="{_e(state)}">scheduling {_e(_setting_words(sched, now))}</span>',
        f"<span class=tick>{_e(tick)}</span>",
    ]
    if state == "on":
        parts.append(_button_form("/api/pause", "Pause 2h", csrf, project["root"], back, "pause"))
    elif state == "paused":
        parts.append(_button_form("/api/resume", "Resume", csrf, project["root"], back, "resume"))
    else:
        parts.append("<span class=hint><code>croft schedule on</code> turns it on</span>")
    html = f'<header class="strip{" stale" if stale else ""}">{"".join(parts)}</header>'
    if stale:
        fix = (stale.get("fix") or {}).get("command")
        html += (
            f'<p class="stale-cause"><strong>SCHEDULER_STALE</strong> {_e(stale.get("message"))}'
            f" <span class=hint>{_e(stale.get('hint'))}</span>"
            + (f" fix: <code>{_e(fix)}</code>" if fix else "")
            + "</p>"
        )
    return html


def _problems(project: dict[str, Any]) -> str:
    """The projects' problems not shown elsewhere on the row or the strip, each once."""
    seen: set[tuple[str, str]] = set()
    items = []
    for env in (project["status"], project["schedule"]):
        for p in env.get("problems") or []:
            key = (p.get("code", ""), p.get("message", ""))
            if p.get("code") in ("SCHEDULER_STALE", "SCHEDULE_HELD", "SCHEDULE_PAUSED") or key in seen:
                continue
            seen.add(key)
            items.append(
                f'<li class="problem {_e(p.get("severity", "error"))}"><strong>{_e(p.get("code"))}</strong> '
                f"{_e(p.get('message'))} <span class=hint>{_e(p.get('hint'))}</span></li>"
            )
    return f"<ul class=problems>{''.join(items)}</ul>" if items else ""


def sparkline(steps: list[dict[str, Any]], now: datetime) -> str:
    """The last 20 durations as bars, oldest left, coloured by result; each bar says its run on hover."""
    shown = list(reversed(steps[:SPARK_RUNS]))
    if not shown:
        return '<svg class=spark width=120 height=24 role=img aria-label="no runs yet"></svg>'
    lengths = [duration_s(s, now) or 0.0 for s in shown]
    top = max(lengths) or 1.0
    bars = []
    for i, (step, length) in enumerate(zip(shown, lengths, strict=True)):
        h = max(2.0, 22.0 * length / top)
        bars.append(
            f'<rect class="bar {_result_class(step.get("status"))}" data-run="{_e(step.get("runId"))}"'
            f' data-seconds="{length:.3f}" x="{i * 6}" y="{24 - h:.1f}" width=5 height="{h:.1f}">'
            f"<title>{_e(clock(step['startedAt'], now))} · {_e(step.get('status'))} · {_e(words(length))}"
            "</title></rect>"
        )
    return (
        f'<svg class=spark width=120 height=24 role=img aria-label="last {len(shown)} durations">'
        f"{''.join(bars)}</svg>"
    )


def _last_run(asset: dict[str, Any], steps: list[dict[str, Any]], root: str, now: datetime) -> str:
    last = asset.get("lastRun")
    if not last:
        return "<span class=none>never</span>"
    step = steps[0] if steps and steps[0].get("runId") == last.get("runId") else None
    parts = [f'<span title="{_e(last["at"])}">{_e(moment(last["at"], now))}</span>', _e(last["status"])]
    if step:
        length = duration_s(step, now)
        if length is not None:
            parts.append(_e(words(length)))
        added = (step.get("rows") or {}).get("added")
        if asset.get("rows") is not None:
            parts.append(f"{_e(asset['rows'])} rows" + (f" (+{_e(added)})" if added else ""))
    link = _url("/asset", project=root, asset=asset["asset"], run=last.get("runId"))
    parts.append(f'<a class=log href="{link}">log</a>')
    return " · ".join(parts)


def _next_fire(asset: dict[str, Any], now: datetime) -> str:
    sched = asset.get("schedule") or {}
    at = sched.get("nextFireAt")
    if not at:
        return _e(sched.get("next") or "-")
    muted = "" if sched.get("next") == "schedule" else f" <span class=hint>({_e(sched.get('next'))})</span>"
    return f'<span title="{_e(at)}">{_e(clock(at, now))}</span> <span class=distance>{_e(relative(at, now))}</span>{muted}'


def _row(
    asset: dict[str, Any],
    held: dict[str, Any] | None,
    runs: dict[str, Any],
    waiting: list[dict[str, Any]],
    project: dict[str, Any],
    now: datetime,
) -> str:
    name, root = asset["asset"], project["root"]
    steps = asset_steps((runs.get("data") or {}).get("runs") or [], name)
    st = derived_state(asset, held, steps, waiting, root, now)
    detail = f"<div class=detail>{_e(st['detail'])}</div>" if st["detail"] else ""
    command = f"<div class=command><code>{_e(st['command'])}</code></div>" if st["command"] else ""
    sched = asset.get("schedule") or {}
    phrase = sched.get("schedule")
    cron = f"{sched.get('cron') or ''} · {project.get('timezone', '')}".strip(" ·")
    schedule = (
        f'<span class=phrase title="{_e(cron)}">{_e(phrase)}</span>'
        if phrase
        else f"<span class=none>{'after inputs' if asset['kind'] != 'ingest' else 'manual'}</span>"
    )
    description = f" · {_e(asset['description'])}" if asset.get("description") else ""
    confirm = run_confirm_text(name)
    run_link = _url("/confirm", project=root, asset=name)
    logs_link = _url("/asset", project=root, asset=name)
    return (
        f'<tr class=asset data-asset="{_e(name)}" data-mark="{_e(st["mark"])}">'
        f'<td class=state><span class="mark m-{_e(st["mark"])}" aria-hidden=true></span>'
        f"<span class=label>{_e(st['label'])}</span>{detail}{command}</td>"
        f'<td class=name><a href="{logs_link}">{_e(name)}</a><div class=kind>{_e(asset["kind"])}{description}</div></td>'
        f"<td class=schedule>{schedule}</td>"
        f"<td class=last>{_last_run(asset, steps, root, now)}</td>"
        f"<td class=trend>{sparkline(steps, now)}</td>"
        f"<td class=next>{_next_fire(asset, now)}</td>"
        f'<td class=actions><a class="button run" href="{run_link}" data-project="{_e(root)}"'
        f' data-asset="{_e(name)}" data-confirm="{_e(confirm)}">Run now</a>'
        f' <a class="button logs" href="{logs_link}">Logs</a></td></tr>'
    )


def _project_section(project: dict[str, Any], now: datetime, csrf: str, back: str) -> str:
    status, schedule = project["status"], project["schedule"]
    head = (
        _strip(project, now, csrf, back)
        if schedule.get("data")
        else f"<header class=strip><h2>{_e(project['name'])}</h2></header>"
    )
    assets = (status.get("data") or {}).get("assets")
    if assets is None:  # croft status could not answer: its problem is the section
        return (
            f'<section class=project data-root="{_e(project["root"])}">{head}{_problems(project)}</section>'
        )
    held = {r["asset"]: r.get("held") for r in (schedule.get("data") or {}).get("assets") or []}
    waiting = ((schedule.get("data") or {}).get("queue") or {}).get("waiting") or []
    rows = "".join(
        _row(a, held.get(a["asset"]), project["runs"].get(a["asset"]) or {}, waiting, project, now)
        for a in assets
    )
    table = (
        "<table class=assets><thead><tr><th>state</th><th>asset</th><th>schedule</th><th>last run</th>"
        f"<th>last {SPARK_RUNS}</th><th>next</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
        if assets
        else "<p class=none>no assets yet: add one under assets/ (<code>croft docs assets</code>)</p>"
    )
    return f'<section class=project data-root="{_e(project["root"])}">{head}{_problems(project)}{table}</section>'


def _notices(notices: list[dict[str, Any]]) -> str:
    items = "".join(f'<li class="notice {_e(n["kind"])}">{_e(n["text"])}</li>' for n in notices)
    return f"<ul class=notices>{items}</ul>" if items else ""


def overview_html(snap: dict[str, Any], csrf: str, notices: list[dict[str, Any]]) -> str:
    now = parse_instant(snap["at"])
    first = snap["projects"][0]["schedule"] if snap["projects"] else {}
    top = (
        f"<header class=top><h1>croft</h1>{_queue_line(first)}{_doctor_line(snap['doctor'])}"
        f"<span class=at>as of {_e(clock(snap['at'], now))}</span></header>"
    )
    sections = "".join(_project_section(p, now, csrf, "/") for p in snap["projects"])
    if not snap["projects"]:
        sections = "<p class=none>no project is registered: <code>croft schedule on</code> in one adds it</p>"
    return _page("croft", csrf, top + _notices(notices) + sections, "overview")


# -- an asset's page ---------------------------------------------------------------------------------


def timeline(steps: list[dict[str, Any]], now: datetime) -> str:
    """Seven days of attempts on one strip, today at the right; each mark is one attempt by its result."""
    width, start = 700, now - timedelta(days=TIMELINE_DAYS)
    span = TIMELINE_DAYS * 86400.0
    marks = []
    for s in steps:
        at = parse_instant(s["startedAt"])
        if at < start:
            continue
        x = width * (at - start).total_seconds() / span
        marks.append(
            f'<rect class="tl {_result_class(s.get("status"))}" data-run="{_e(s.get("runId"))}" x="{x:.1f}"'
            f" y=4 width=3 height=20><title>{_e(clock(s['startedAt'], now))} · {_e(s.get('status'))}</title></rect>"
        )
    days = "".join(
        f'<line class=day x1="{width * d / TIMELINE_DAYS:.1f}" x2="{width * d / TIMELINE_DAYS:.1f}" y1=0 y2=28></line>'
        for d in range(1, TIMELINE_DAYS)
    )
    return (
        f'<svg class=timeline viewBox="0 0 {width} 28" width="{width}" height=28 role=img'
        f' aria-label="the last {TIMELINE_DAYS} days of attempts">{days}{"".join(marks)}</svg>'
    )


def _attempts(steps: list[dict[str, Any]], root: str, asset: str, chosen: str | None, now: datetime) -> str:
    rows = []
    for s in steps:
        length = duration_s(s, now)
        rows.append(
            f'<tr class="{"chosen" if s["runId"] == chosen else ""}" data-run="{_e(s["runId"])}">'
            f'<td><a href="{_url("/asset", project=root, asset=asset, run=s["runId"])}">{_e(s["runId"])}</a></td>'
            f'<td title="{_e(s["startedAt"])}">{_e(moment(s["startedAt"], now))}</td>'
            f"<td>#{_e(s['attempt'])}</td><td class={_result_class(s['status'])}>{_e(s['status'])}</td>"
            f"<td>{_e(words(length) if length is not None else '-')}</td>"
            f"<td>{_e('schedule' if s.get('trigger') == 'schedule' else 'manual')}</td>"
            f"<td>{_e((s.get('error') or {}).get('code') or '')}</td></tr>"
        )
    return (
        "<table class=attempts><thead><tr><th>run</th><th>started</th><th>attempt</th><th>result</th>"
        f"<th>took</th><th>by</th><th>error</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _run_report(run: dict[str, Any] | None, asset: str) -> str:
    if run is None:
        return "<p class=none>no run yet</p>"
    data = run.get("data")
    if not data:
        first = (run.get("problems") or [{}])[0]
        return f"<p class=problem>{_e(first.get('code'))} {_e(first.get('message'))}</p>"
    head = data["run"]
    going = head["status"] == "running"
    out = [
        f'<h3 class=run data-run="{_e(head["runId"])}" data-status="{_e(head["status"])}">run {_e(head["runId"])}:'
        f" {_e(head['status'])}{' (following its log)' if going else ''}</h3>"
    ]
    steps = sorted(data["steps"], key=lambda s: s["asset"] != asset)  # this asset's first
    for s in steps:
        lines = "\n".join(s.get("lines") or [])
        cut = "<p class=hint>(the last lines only)</p>" if s.get("truncated") else ""
        out.append(
            f"<h4>{_e(s['asset'])} #{_e(s['attempt'])}: {_e(s['status'])}</h4>{cut}"
            f'<pre class=log data-asset="{_e(s["asset"])}">{_e(lines)}</pre>'
        )
    return "".join(out)


def asset_html(page: dict[str, Any], csrf: str, notices: list[dict[str, Any]]) -> str:
    now = parse_instant(page["at"])
    root, asset = page["root"], page["asset"]
    steps_env = page["steps"]
    steps = (steps_env.get("data") or {}).get("steps")
    if steps is None:
        first = (steps_env.get("problems") or [{}])[0]
        body = f"<p class=problem>{_e(first.get('code'))} {_e(first.get('message'))}</p>"
    else:
        chosen = ((page.get("run") or {}).get("data") or {}).get("run", {}).get("runId")
        body = (
            f"<section class=timeline-strip><h3>the last {TIMELINE_DAYS} days</h3>{timeline(steps, now)}</section>"
            f"<section class=runlog>{_run_report(page.get('run'), asset)}</section>"
            f"<section><h3>the last {len(steps)} attempts</h3>{_attempts(steps, root, asset, chosen, now)}</section>"
        )
    confirm = run_confirm_text(asset)
    top = (
        f'<header class=top><a href="/">← all assets</a><h1>{_e(asset)}</h1>'
        f'<a class="button run" href="{_url("/confirm", project=root, asset=asset)}" data-project="{_e(root)}"'
        f' data-asset="{_e(asset)}" data-confirm="{_e(confirm)}">Run now</a>'
        f"<span class=at>as of {_e(clock(page['at'], now))}</span></header>"
    )
    return _page(f"croft · {asset}", csrf, top + _notices(notices) + body, "asset")


# -- the rest ---------------------------------------------------------------------------------------


def confirm_html(root: str, asset: str, csrf: str) -> str:
    """Run now without JavaScript: the same question, and a form that asks the server."""
    body = (
        f"<h1>Run {_e(asset)}?</h1><p>{_e(run_confirm_text(asset))}</p>"
        f'<form method=post action="/api/run">{_csrf_field(csrf)}'
        f'<input type=hidden name=project value="{_e(root)}"><input type=hidden name=asset value="{_e(asset)}">'
        f'<input type=hidden name=back value="{_url("/asset", project=root, asset=asset)}">'
        '<button type=submit>Run now</button> <a href="/">cancel</a></form>'
    )
    return _page(f"croft · run {asset}", csrf, body, "confirm")


def refused_html(status: int, why: str) -> str:
    """A refusal: the reason and what to do, with nothing of the page."""
    return (
        f"<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>croft ui: {status}</title></head>"
        f"<body><h1>{status}</h1><p>{_e(why)}</p></body></html>\n"
    )
