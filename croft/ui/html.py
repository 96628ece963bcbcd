"""What every page of ``croft ui`` is built from: the shell (the shipped script and style only, no
inline script or style, so the Content-Security-Policy stays strict), escaping, links, the top
navigation, times the reader's browser shows in its own zone, and croft's messages as prose."""

from __future__ import annotations

import re
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

from croft.core.when import clock, in_text, relative
from croft.core.zones import zone

__all__ = ["REFRESH_S", "e", "nav", "prose", "result_class", "shell", "url", "when", "zone_of"]

REFRESH_S = 10  # without JavaScript the page reloads itself this often
# a step's result -> its colour's class, the same in the strip, the timeline and an asset's page
_RESULT_CLASS = {
    "failed": "s-failed",
    "crashed": "s-failed",
    "running": "s-running",
    "skipped": "s-skipped",
    "ok": "s-ok",
    "unchanged": "s-ok",
}
_TICKS = re.compile(r"`([^`\n]{1,200})`")
PAGES = (
    ("/", "assets", "overview"),
    ("/lineage", "lineage", "lineage"),
    ("/timeline", "timeline", "timeline"),
)


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def url(path: str, **query: Any) -> str:
    kept = {k: v for k, v in query.items() if v not in (None, "")}
    return e(f"{path}?{urlencode(kept)}" if kept else path)


def zone_of(name: str | None) -> Any:
    try:
        return zone(name or "UTC")
    except Exception:  # a zone croft.json names wrongly: validate says so; the page shows UTC
        return zone("UTC")


def when(instant: str | None, now: datetime, zone: Any, *, age: bool = True) -> str:
    """An instant as ``<time>``: the server writes it in the project's zone, and the page's script
    rewrites it in the reader's own zone, with how long ago (or how soon) it is, as time passes."""
    if not instant:
        return "<span class=none>-</span>"
    text = clock(instant, now, zone) + (f" ({relative(instant, now)})" if age else "")
    return f'<time datetime="{e(instant)}"{" data-age" if age else ""}>{e(text)}</time>'


def prose(text: str | None, now: datetime, zone: Any) -> str:
    """A message of croft's for a person: its instants as clocks, its `commands` as code, escaped."""
    if not text:
        return ""
    return _TICKS.sub(lambda m: f"<code>{m.group(1)}</code>", e(in_text(text, now, zone)))


def nav(current: str) -> str:
    links = "".join(
        f'<a href="{href}"{" aria-current=page" if key == current else ""}>{e(label)}</a>'
        for href, label, key in PAGES
    )
    return f'<nav aria-label="pages">{links}</nav>'


def shell(title: str, csrf: str, body: str, page: str) -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title>"
        f'<meta name=csrf content="{e(csrf)}">'
        '<link rel=icon href="data:,"><link rel=stylesheet href="/static/ui.css">'
        '<script src="/static/ui.js" defer></script>'
        f'<noscript><meta http-equiv=refresh content="{REFRESH_S}"></noscript>'
        f"</head><body data-page={e(page)}>"
        f"<main id=live>{body}</main></body></html>\n"
    )


def result_class(result: str) -> str:
    """The CSS class of a step's result (``s-other`` for any other, interrupted included)."""
    return _RESULT_CLASS.get(result, "s-other")
