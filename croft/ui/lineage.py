"""The lineage graph: each project's assets as nodes in layers, ingests on the left and each
transform one layer right of the deepest input it reads, an edge per input, each node coloured by its
state (``derived``) and a link to its page. Server-rendered SVG, nothing loaded.

The order inside a layer is chosen to keep edges short (a few sweeps of the barycentre rule: each
node moves toward the mean position of its neighbours), so a chain reads straight across. A large
graph keeps its size and scrolls in its frame rather than shrinking its names away.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from croft.core.clock import parse_instant
from croft.ui.derived import states_of
from croft.ui.html import e, nav, shell, url, when, zone_of

__all__ = ["layout", "lineage_html", "lineage_svg"]

COL_W, NODE_W, NODE_H, ROW_H, PAD = 240, 180, 26, 34, 12
SWEEPS = 6
NAME_CHARS = 24


def layout(inputs: dict[str, list[str]], names: list[str]) -> dict[str, tuple[int, int]]:
    """``{asset: (layer, row)}``: layer by the longest path from a node that reads no other asset, rows
    ordered by the barycentre of the neighbours, sweeping right then left."""
    known = set(names)
    ins = {n: [i for i in inputs.get(n, []) if i in known and i != n] for n in names}
    layer: dict[str, int] = {}

    def depth(n: str, seen: frozenset[str]) -> int:
        if n in layer:
            return layer[n]
        if n in seen:  # a cycle (validate refuses it): cut it here
            return 0
        d = 1 + max((depth(i, seen | {n}) for i in ins[n]), default=-1)
        layer[n] = d
        return d

    for n in names:
        depth(n, frozenset())
    layers: dict[int, list[str]] = {}
    for n in names:
        layers.setdefault(layer[n], []).append(n)
    outs: dict[str, list[str]] = {n: [] for n in names}
    for n in names:
        for i in ins[n]:
            outs[i].append(n)
    pos = {n: float(i) for col in layers.values() for i, n in enumerate(col)}
    order = sorted(layers)
    for sweep in range(SWEEPS):
        cols = order[1:] if sweep % 2 == 0 else list(reversed(order[:-1]))
        for c in cols:
            near = ins if sweep % 2 == 0 else outs
            col = layers[c]
            key = {n: (sum(pos[m] for m in near[n]) / len(near[n])) if near[n] else pos[n] for n in col}
            col.sort(key=lambda n: (key[n], n))
            for row, n in enumerate(col):
                pos[n] = float(row)
    return {n: (layer[n], int(pos[n])) for n in names}


def lineage_svg(project: dict[str, Any], states: dict[str, dict[str, Any]]) -> str:
    assets = (project["status"].get("data") or {}).get("assets") or []
    names = [a["asset"] for a in assets]
    if not names:
        return "<p class=none>no assets yet</p>"
    inputs = project.get("inputs") or {}
    where = layout(inputs, names)
    rows = max(r for _, r in where.values()) + 1
    cols = max(c for c, _ in where.values()) + 1
    width, height = cols * COL_W - (COL_W - NODE_W) + 2 * PAD, rows * ROW_H + 2 * PAD

    sizes: dict[int, int] = {}
    for c, _ in where.values():
        sizes[c] = sizes.get(c, 0) + 1
    offset = {c: (rows - size) / 2 for c, size in sizes.items()}  # each layer centred: shorter edges

    def xy(n: str) -> tuple[float, float]:
        c, r = where[n]
        return PAD + c * COL_W, PAD + (r + offset[c]) * ROW_H

    edges = []
    for n in names:
        for i in inputs.get(n, []):
            if i not in where:
                continue
            (x1, y1), (x2, y2) = xy(i), xy(n)
            x1, y1, y2 = x1 + NODE_W, y1 + NODE_H / 2, y2 + NODE_H / 2
            if where[n][0] - where[i][0] > 1:  # past a layer between: bow below its row's boxes
                low = max(y1, y2) + ROW_H / 2
                d = f"M{x1:.0f},{y1:.0f} C{x1 + 40:.0f},{low:.0f} {x2 - 40:.0f},{low:.0f} {x2:.0f},{y2:.0f}"
            else:
                mid = (x1 + x2) / 2
                d = f"M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
            edges.append(f'<path class=edge data-from="{e(i)}" data-to="{e(n)}" d="{d}"></path>')
    nodes = []
    for a in assets:
        n = a["asset"]
        x, y = xy(n)
        st = states.get(n) or {"mark": "never", "label": "never run"}
        shown = n if len(n) <= NAME_CHARS else n[: NAME_CHARS - 1] + "…"
        nodes.append(
            f'<a class=node href="{url("/asset", project=project["root"], asset=n)}" data-asset="{e(n)}"'
            f' data-mark="{e(st["mark"])}" aria-label="{e(n)}: {e(st["label"])}">'
            f"<title>{e(n)} ({e(a['kind'])}): {e(st['label'])}</title>"
            f'<rect class="m-{e(st["mark"])}" x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx=5></rect>'
            f'<text x="{x + 10}" y="{y + 17}">{e(shown)}</text></a>'
        )
    return (
        f'<div class=graph-frame><svg class=lineage width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        f' role=group aria-label="lineage of {e(project["name"])}: {len(names)} assets">'
        f"<g class=edges>{''.join(edges)}</g><g class=nodes>{''.join(nodes)}</g></svg></div>"
    )


def _legend() -> str:
    marks = [
        ("ok", "ok"),
        ("failed", "failed"),
        ("running", "running"),
        ("held", "held"),
        ("stale", "stale"),
        ("skipped", "skipped"),
        ("never", "never run"),
    ]
    return (
        "<p class=legend>"
        + " ".join(f'<span><span class="mark m-{m}" aria-hidden=true></span>{e(t)}</span>' for m, t in marks)
        + "</p>"
    )


def lineage_html(snap: dict[str, Any], csrf: str) -> str:
    """``snap``'s projects each carry ``inputs`` (``snapshot.inputs_of``), added by the server."""
    now: datetime = parse_instant(snap["at"])
    zone = zone_of(snap["projects"][0].get("timezone") if snap["projects"] else None)
    parts = []
    for p in snap["projects"]:
        states = states_of(p, snap.get("queue"), now)
        parts.append(
            f'<section class=project data-root="{e(p["root"])}"><h2>{e(p["name"])}</h2>{lineage_svg(p, states)}</section>'
        )
    top = (
        f"<header class=top><h1>lineage</h1>{nav('lineage')}"
        f"<span class=at>as of {when(snap['at'], now, zone, age=False)}</span></header>"
        "<p class=hint>Ingests on the left; each asset one step right of what it reads. Each box is a link to"
        " its page.</p>" + _legend()
    )
    return shell("croft · lineage", csrf, top + "".join(parts), "lineage")
