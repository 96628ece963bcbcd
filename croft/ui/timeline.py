"""The timeline: for each asset, the last 24 hours of attempts (where each started, how long it took,
its result) and the next 24 hours of starts the flight plan predicts (``croft schedule simulate``: the
due policy with jitter, quiet hours and queue waits), around a line at now. A held asset's
fires are drawn hollow and say "held"; while scheduling is paused the fires before its end say
"paused"; while it is off none are planned. Server-rendered SVG, one row per asset."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from croft.core.clock import parse_instant
from croft.core.when import clock
from croft.ui.derived import held_of, states_of
from croft.ui.html import e, nav, result_class, shell, url, when, zone_of

__all__ = ["timeline_html", "timeline_row"]

WIDTH, HEIGHT = 720, 22


def _x(at: datetime, start: datetime, span_s: float) -> float:
    return WIDTH * (at - start).total_seconds() / span_s


def timeline_row(
    asset: dict[str, Any],
    past: list[dict[str, Any]],
    fires: list[str],
    setting: dict[str, Any],
    now: datetime,
    hours: int,
    zone: Any,
) -> str:
    start, span = now - timedelta(hours=hours), 2 * hours * 3600.0
    parts = [f'<line class=now x1="{WIDTH / 2}" x2="{WIDTH / 2}" y1=0 y2="{HEIGHT}"></line>']
    for h in range(0, 2 * hours + 1, 6):
        x = WIDTH * h / (2 * hours)
        parts.append(f'<line class=hour x1="{x:.1f}" x2="{x:.1f}" y1=0 y2="{HEIGHT}"></line>')
    for a in past:
        begin = parse_instant(a["startedAt"])
        end = parse_instant(a["finishedAt"]) if a.get("finishedAt") else now
        x1 = max(0.0, _x(begin, start, span))
        w = max(2.0, _x(end, start, span) - x1)
        label = f"{clock(begin, now, zone)} · {a['status']} · attempt {a['attempt']}"
        parts.append(
            f'<rect class="run {result_class(a["status"])}" data-run="{e(a["runId"])}" data-status="{e(a["status"])}"'
            f' x="{x1:.1f}" y=4 width="{min(w, WIDTH / 2 - x1 + 1):.1f}" height="{HEIGHT - 8}"><title>{e(label)}</title></rect>'
        )
    state = setting.get("effective") or setting.get("state", "off")
    held = held_of(asset)
    paused_until = (
        parse_instant(setting["pausedUntil"]) if state == "paused" and setting.get("pausedUntil") else None
    )
    if state != "off":
        for f in fires:
            at = parse_instant(f)
            if state == "paused" and (paused_until is None or at < paused_until):
                kind, why = "paused", "paused"
            elif held:
                kind, why = "held", f"held ({held['release']} releases it)"
            else:
                kind, why = "due", "planned"
            x = _x(at, start, span)
            parts.append(
                f'<path class="fire {kind}" data-fire="{e(f)}" d="M{x:.1f},4 l4,7 l-4,7 l-4,-7 z">'
                f"<title>{e(clock(at, now, zone))} · {e(why)}</title></path>"
            )
    said = f"{len(past)} attempts in the last {hours} h, {len(fires) if state != 'off' else 0} fires planned"
    return (
        f'<svg class=tl width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role=img'
        f' aria-label="{e(said)}">{"".join(parts)}</svg>'
    )


def _axis(now: datetime, hours: int, zone: Any) -> str:
    ticks = []
    for h in range(0, 2 * hours + 1, 6):
        at = now + timedelta(hours=h - hours)
        x = WIDTH * h / (2 * hours)
        anchor = "end" if h == 2 * hours else "middle"
        if h == 0:
            continue  # the left edge: its label would run into the next one
        text = "now" if h == hours else clock(at, now, zone)
        ticks.append(f'<text x="{x:.1f}" y=12 text-anchor="{anchor}">{e(text)}</text>')
    return f'<svg class=axis width="{WIDTH}" height=16 viewBox="0 0 {WIDTH} 16" aria-hidden=true>{"".join(ticks)}</svg>'


def timeline_html(snap: dict[str, Any], lines: list[dict[str, Any]], csrf: str) -> str:
    now = parse_instant(snap["at"])
    zone = zone_of(snap["projects"][0].get("timezone") if snap["projects"] else None)
    sections = []
    for project, line in zip(snap["projects"], lines, strict=True):
        pzone = zone_of(project.get("timezone"))
        data = project["status"].get("data") or {}
        setting = data.get("scheduling") or {}
        states = states_of(project, snap.get("queue"), now)
        hours = line["hours"]
        rows = []
        for a in data.get("assets") or []:
            n = a["asset"]
            st = states.get(n, {"mark": "never", "label": ""})
            rows.append(
                f'<tr data-asset="{e(n)}"><th scope=row><span class="mark m-{e(st["mark"])}" aria-hidden=true></span>'
                f'<a href="{url("/asset", project=project["root"], asset=n)}">{e(n)}</a></th>'
                f"<td>{timeline_row(a, line['past'].get(n, []), line['planned'].get(n, []), setting, now, hours, pzone)}</td></tr>"
            )
        sections.append(
            f'<section class=project data-root="{e(project["root"])}"><h2>{e(project["name"])}</h2>'
            f"<table class=timeline><thead><tr><th scope=col>asset</th><th scope=col>{_axis(now, hours, pzone)}"
            f"<span class=sr>the last {hours} hours, then the next {hours}</span></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></section>"
        )
    top = (
        f"<header class=top><h1>timeline</h1>{nav('timeline')}"
        f"<span class=at>as of {when(snap['at'], now, zone, age=False)}</span></header>"
        "<p class=hint>Left of the line: what ran in the last 24 hours (bars, by result). Right: the fires"
        " planned in the next 24 hours (diamonds; hollow when held or paused).</p>"
    )
    return shell("croft · timeline", csrf, top + "".join(sections), "timeline")
