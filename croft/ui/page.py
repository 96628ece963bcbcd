"""The overview as HTML, rendered from the shared look (``snapshot``) and nothing else, on the server:
it works without JavaScript (it refreshes itself), and the shipped script only swaps in a fresh copy
of the same HTML when the server says something changed. Every value is escaped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from croft.core.clock import parse_instant
from croft.core.when import clock
from croft.ui.derived import states_of
from croft.ui.html import e, nav, prose, result_class, shell, url, when, zone_of
from croft.ui.snapshot import STRIP_BUCKETS, parse_strip

__all__ = [
    "confirm_html",
    "doctor_line",
    "notices_html",
    "overview_html",
    "problems_html",
    "refused_html",
    "run_confirm_text",
    "scheduling_words",
    "strip_svg",
]

BAR_W, BAR_GAP, BAR_H = 5, 1, 18


def run_confirm_text(asset: str) -> str:
    """What Run now asks first: a run a person starts approves the code, as ``croft run`` says."""
    return (
        f"Run {asset} now? A run you start approves {asset}'s current code for the scheduler, as "
        f"“croft run {asset}” does."
    )


def _csrf_field(csrf: str) -> str:
    return f'<input type=hidden name=csrf value="{e(csrf)}">'


def _button_form(action: str, label: str, csrf: str, root: str, back: str, cls: str) -> str:
    return (
        f'<form method=post action="{e(action)}" class="action {e(cls)}">{_csrf_field(csrf)}'
        f'<input type=hidden name=project value="{e(root)}">'
        f'<input type=hidden name=back value="{e(back)}">'
        f"<button type=submit>{e(label)}</button></form>"
    )


def doctor_line(doctor: dict[str, Any] | None, now: datetime, zone: Any) -> str:
    if doctor is None:
        return '<span class="doctor">doctor: checking…</span>'
    checks = (doctor.get("data") or {}).get("checks") or []
    broken = [c for c in checks if not c.get("ok")]
    if not checks:
        first = (doctor.get("problems") or [{}])[0]
        return f'<span class="doctor bad">doctor: {prose(first.get("message", "could not check"), now, zone)}</span>'
    warned = [c for c in checks if c.get("warning")]  # it holds, but a person would be told nothing
    if not broken and not warned:
        return f'<span class="doctor good">doctor: all {len(checks)} checks pass</span>'
    first, cls, sign = (broken[0], "bad", "") if broken else (warned[0], "warn", "⚠ ")
    many = broken or warned
    more = f" (and {len(many) - 1} more)" if len(many) > 1 else ""
    fix = f" · fix: <code>{e(first['fix'])}</code>" if first.get("fix") else ""
    return (
        f'<span class="doctor {cls}">doctor: {sign}{e(first["check"])}: '
        f"{prose(first.get('detail'), now, zone)}{more}{fix}</span>"
    )


def _queue_line(queue: dict[str, Any] | None) -> str:
    if not queue:
        return ""
    waiting = queue.get("waitingCount", len(queue.get("waiting") or []))
    text = f"{queue.get('running', 0)} of {queue.get('cap', '?')} going, {waiting} waiting"
    return f'<span class=queue title="the per-user cap on scheduled runs">queue: {e(text)}</span>'


def scheduling_words(sched: dict[str, Any], now: datetime, zone: Any) -> str:
    state = sched.get("effective") or sched.get("state", "off")
    if state == "paused":
        until = sched.get("pausedUntil")
        return "paused until " + (when(until, now, zone) if until else "<code>croft schedule on</code>")
    return e(state)


def _stale(problems: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((p for p in problems if p.get("code") == "SCHEDULER_STALE"), None)


def _strip_header(project: dict[str, Any], now: datetime, zone: Any, csrf: str, back: str) -> str:
    status = project["status"]
    sched = (status.get("data") or {}).get("scheduling") or {}
    state = sched.get("effective") or sched.get("state", "off")
    beat = sched.get("heartbeatAt")
    parts = [
        f"<h2>{e(project['name'])}</h2>",
        f'<span class="setting" data-state="{e(state)}">scheduling {scheduling_words(sched, now, zone)}</span>',
        f"<span class=tick>last tick {when(beat, now, zone)}</span>"
        if beat
        else "<span class=tick>no tick yet</span>",
    ]
    if state == "on":
        parts.append(_button_form("/api/pause", "Pause 2h", csrf, project["root"], back, "pause"))
    elif state == "paused":
        parts.append(_button_form("/api/resume", "Resume", csrf, project["root"], back, "resume"))
    else:
        parts.append("<span class=hint><code>croft schedule on</code> turns it on</span>")
    stale = _stale(status.get("problems") or [])
    html = f'<header class="strip{" stale" if stale else ""}">{"".join(parts)}</header>'
    if stale:
        fix = (stale.get("fix") or {}).get("command")
        html += (
            f'<p class="stale-cause" role=alert><strong>The scheduler is not ticking.</strong> '
            f"{prose(stale.get('message'), now, zone)} <span class=hint>{prose(stale.get('hint'), now, zone)}</span>"
            + (f" Fix: <code>{e(fix)}</code>" if fix else "")
            + "</p>"
        )
    return html


# problems the rows or the strip already show, each in its place
_SHOWN_ELSEWHERE = frozenset({"SCHEDULER_STALE", "SCHEDULE_HELD", "SCHEDULE_PAUSED", "LARGE_REPROCESS"})


def problems_html(envelopes: list[dict[str, Any]], now: datetime, zone: Any) -> str:
    """Every problem the commands gave that no row shows, each once, in words: the message and the hint
    (any code croft adds later shows here without a change to the page); its code is a small label."""
    seen: set[tuple[str, str]] = set()
    items = []
    for env in envelopes:
        for p in env.get("problems") or []:
            key = (p.get("code", ""), p.get("message", ""))
            if p.get("code") in _SHOWN_ELSEWHERE or key in seen:
                continue
            seen.add(key)
            fix = (p.get("fix") or {}).get("command") if isinstance(p.get("fix"), dict) else None
            items.append(
                f'<li class="problem {e(p.get("severity", "error"))}">{prose(p.get("message"), now, zone)}'
                f" <span class=hint>{prose(p.get('hint'), now, zone)}</span>"
                + (f" Fix: <code>{e(fix)}</code>" if fix else "")
                + f' <span class=code title="croft docs {e(p.get("code"))}">{e(p.get("code"))}</span></li>'
            )
    return f"<ul class=problems>{''.join(items)}</ul>" if items else ""


def strip_svg(text: str, start: datetime, bucket_s: int, count: int, zone: Any, now: datetime) -> str:
    """The last 7 days as ``count`` bars, oldest left: each bar is one six-hour bucket coloured by its
    WORST result (a failure is never hidden by the successes around it), its height by how many
    attempts it held; an empty bucket is a dot on the line. One path per colour keeps a thousand rows
    light; the strip's label names the buckets that had a failure."""
    buckets = parse_strip(text)
    top = max((b[1] for b in buckets if b), default=1) or 1
    width = count * (BAR_W + BAR_GAP)
    paths: dict[str, list[str]] = {}
    failed_at = []
    for i in range(count):
        x = i * (BAR_W + BAR_GAP)
        b = buckets[i] if i < len(buckets) else None
        if b is None:
            paths.setdefault("empty", []).append(f"M{x},{BAR_H - 1}h{BAR_W}v1h-{BAR_W}z")
            continue
        worst, n, bad = b
        h = round(max(4.0, BAR_H * (0.35 + 0.65 * n / top)))
        paths.setdefault(result_class(worst), []).append(f"M{x},{BAR_H - h}h{BAR_W}v{h}h-{BAR_W}z")
        if bad:
            failed_at.append(clock(start + timedelta(seconds=i * bucket_s), now, zone))
    body = "".join(f'<path class="bar {cls}" d="{"".join(d)}"></path>' for cls, d in paths.items())
    said = (
        f"the last 7 days: failures in {len(failed_at)} of {count} six-hour spans, from {', '.join(failed_at[-3:])}"
        if failed_at
        else "the last 7 days: no failure"
    )
    return (
        f'<svg class=strip7 width="{width}" height="{BAR_H}" viewBox="0 0 {width} {BAR_H}" role=img'
        f' aria-label="{e(said)}" data-failed="{len(failed_at)}" data-strip="{e(text)}"><title>{e(said)}</title>{body}</svg>'
    )


def _last_run(asset: dict[str, Any], root: str, now: datetime, zone: Any) -> str:
    last = asset.get("lastRun")
    if not last:
        return "<span class=none>never</span>"
    parts = [when(last["at"], now, zone), e(last["status"])]
    if asset.get("rows") is not None:
        parts.append(f"{e(asset['rows'])} rows")
    return " · ".join(parts)


def _next_fire(asset: dict[str, Any], sched_state: str, stale: bool, now: datetime, zone: Any) -> str:
    sched = asset.get("schedule") or {}
    at, nxt = sched.get("nextFireAt"), sched.get("next")
    if not at:
        return f"<span class=none>{e(nxt or '-')}</span>"
    if sched_state == "off":
        return '<span class="none off">none while scheduling is off</span>'
    if sched_state == "paused":
        return f'<span class="none off">paused</span> <span class=hint>(then {when(at, now, zone, age=False)})</span>'
    if stale:
        return (
            f'<span class="late">{when(at, now, zone, age=False)}</span>'
            " <span class=hint>only once the scheduler ticks again</span>"
        )
    return when(at, now, zone)


def _row(
    asset: dict[str, Any],
    st: dict[str, Any],
    project: dict[str, Any],
    snap: dict[str, Any],
    ctx: dict[str, Any],
) -> str:
    name, root = asset["asset"], project["root"]
    now, zone = ctx["now"], ctx["zone"]
    detail = f"<div class=detail>{prose(st['detail'], now, zone)}</div>" if st["detail"] else ""
    command = f"<div class=command><code>{e(st['command'])}</code></div>" if st["command"] else ""
    sched = asset.get("schedule") or {}
    phrase = sched.get("schedule")
    cron_text = f"{sched.get('cron') or ''} · {project.get('timezone', '')}".strip(" ·")
    schedule = (
        f'<span class=phrase title="{e(cron_text)}">{e(phrase)}</span>'
        if phrase
        else f"<span class=none>{'after inputs' if asset['kind'] != 'ingest' else 'manual'}</span>"
    )
    description = f" · {e(asset['description'])}" if asset.get("description") else ""
    page_link = url("/asset", project=root, asset=name)
    if project.get("stripsPending"):
        strip = '<span class="none counting">counting…</span>'
    else:
        strip = strip_svg(
            project.get("strips", {}).get(name, ""),
            ctx["start"],
            snap.get("bucketSeconds", 21600),
            ctx["buckets"],
            zone,
            now,
        )
    return (
        f'<tr class=asset data-asset="{e(name)}" data-mark="{e(st["mark"])}">'
        f'<td class=state><span class="mark m-{e(st["mark"])}" aria-hidden=true></span>'
        f"<span class=label>{e(st['label'])}</span>{detail}{command}</td>"
        f'<td class=name><a href="{page_link}">{e(name)}</a><div class=kind>{e(asset["kind"])}{description}</div></td>'
        f"<td class=schedule>{schedule}</td>"
        f"<td class=last>{_last_run(asset, root, now, zone)}</td>"
        f"<td class=trend>{strip}</td>"
        f"<td class=next>{_next_fire(asset, ctx['sched_state'], ctx['stale'], now, zone)}</td>"
        f'<td class=actions><a class="button run" href="{url("/confirm", project=root, asset=name)}"'
        f' data-project="{e(root)}" data-asset="{e(name)}" data-confirm="{e(run_confirm_text(name))}"'
        f' aria-label="Run now: {e(name)}">Run now</a>{_asset_pause(name, sched, root, ctx)}</td></tr>'
    )


def _asset_pause(name: str, sched: dict[str, Any], root: str, ctx: dict[str, Any]) -> str:
    """Pause 2h for a scheduled ingest (``croft schedule pause ASSET --for 2h``); Resume for one paused by
    itself (``croft schedule resume ASSET``)."""
    hold = sched.get("hold") or {}
    if hold.get("kind") == "asset_paused":
        action, label = "/api/resume", "Resume"
    elif sched.get("schedule") and sched.get("cron"):
        action, label = "/api/pause", "Pause 2h"
    else:
        return ""
    return (
        f'<form method=post action="{action}" class="action asset-pause">{_csrf_field(ctx["csrf"])}'
        f'<input type=hidden name=project value="{e(root)}">'
        f'<input type=hidden name=asset value="{e(name)}">'
        f'<input type=hidden name=back value="{e(ctx["back"])}">'
        f'<button type=submit aria-label="{e(label)}: {e(name)}">{e(label)}</button></form>'
    )


def _project_section(
    project: dict[str, Any], snap: dict[str, Any], now: datetime, csrf: str, back: str
) -> str:
    status = project["status"]
    zone = zone_of(project.get("timezone"))
    data = status.get("data") or {}
    head = (
        _strip_header(project, now, zone, csrf, back)
        if data.get("scheduling")
        else f"<header class=strip><h2>{e(project['name'])}</h2></header>"
    )
    assets = data.get("assets")
    problems = problems_html([status], now, zone)
    if assets is None:  # croft status could not answer: its problem is the section
        return f'<section class=project data-root="{e(project["root"])}">{head}{problems}</section>'
    sched = data.get("scheduling") or {}
    ctx = {
        "now": now,
        "zone": zone,
        "start": parse_instant(project["stripStart"]) if project.get("stripStart") else now,
        "buckets": STRIP_BUCKETS,
        "sched_state": sched.get("effective") or sched.get("state", "off"),
        "stale": _stale(status.get("problems") or []) is not None,
        "csrf": csrf,
        "back": back,
    }
    states = states_of(project, snap.get("queue"), now)
    rows = "".join(_row(a, states[a["asset"]], project, snap, ctx) for a in assets)
    table = (
        "<table class=assets><thead><tr><th scope=col>state</th><th scope=col>asset</th>"
        "<th scope=col>schedule</th><th scope=col>last run</th><th scope=col>last 7 days</th>"
        f"<th scope=col>next</th><th scope=col><span class=sr>actions</span></th></tr></thead><tbody>{rows}</tbody></table>"
        if assets
        else "<p class=none>no assets yet: add one under assets/ (<code>croft docs assets</code>)</p>"
    )
    return f'<section class=project data-root="{e(project["root"])}">{head}{problems}{table}</section>'


def notices_html(notices: list[dict[str, Any]]) -> str:
    items = "".join(f'<li class="notice {e(n["kind"])}">{e(n["text"])}</li>' for n in notices)
    return f"<ul class=notices aria-live=polite>{items}</ul>"


def overview_html(snap: dict[str, Any], csrf: str, notices: list[dict[str, Any]]) -> str:
    now = parse_instant(snap["at"])
    zone = zone_of(snap["projects"][0].get("timezone") if snap["projects"] else None)
    top = (
        f"<header class=top><h1>croft</h1>{nav('overview')}{_queue_line(snap.get('queue'))}"
        f"{doctor_line(snap.get('doctor'), now, zone)}"
        f"<span class=at>as of {when(snap['at'], now, zone, age=False)}</span></header>"
    )
    sections = "".join(_project_section(p, snap, now, csrf, "/") for p in snap["projects"])
    if not snap["projects"]:
        sections = "<p class=none>no project is registered: <code>croft schedule on</code> in one adds it</p>"
    return shell("croft", csrf, top + notices_html(notices) + sections, "overview")


# -- the rest ---------------------------------------------------------------------------------------


def confirm_html(root: str, asset: str, csrf: str) -> str:
    """Run now without JavaScript: the same question, and a form that asks the server."""
    body = (
        f"<h1>Run {e(asset)}?</h1><p>{e(run_confirm_text(asset))}</p>"
        f'<form method=post action="/api/run">{_csrf_field(csrf)}'
        f'<input type=hidden name=project value="{e(root)}"><input type=hidden name=asset value="{e(asset)}">'
        f'<input type=hidden name=back value="{url("/asset", project=root, asset=asset)}">'
        '<button type=submit>Run now</button> <a href="/">cancel</a></form>'
    )
    return shell(f"croft · run {asset}", csrf, body, "confirm")


def refused_html(status: int, why: str) -> str:
    """A refusal: the reason and what to do, with nothing of the page."""
    return (
        f"<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>croft ui: {status}</title></head>"
        f"<body><main><h1>{status}</h1><p>{e(why)}</p></main></body></html>\n"
    )
