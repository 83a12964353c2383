"""The Paths page (a Sankey drawn as server-side SVG) and the Transitions page."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app import periods
from sessions_app.aggregates.paths import ENTRANCE, FROM
from sessions_app.core.bounds import RangeError
from sessions_app.models import Site
from sessions_app.params import query_params
from sessions_app.paths import reads
from sessions_app.permissions import site_page

COLUMN = 190  # px between steps
NODE_WIDTH = 14
HEIGHT = 420
GAP = 10  # px between the nodes of a step


def sankey_layout(answer: dict[str, Any]) -> dict[str, Any]:
    """Place the Sankey: a column per step, nodes stacked by count, flows as bands whose
    width is their count (one scale for the whole drawing)."""
    columns: dict[int, list[dict[str, Any]]] = {}
    for node in answer["nodes"]:
        columns.setdefault(node["step"], []).append(node)
    tallest = max((sum(n["count"] for n in c) for c in columns.values()), default=0)
    most = max((len(c) for c in columns.values()), default=1)
    scale = (HEIGHT - GAP * most) / tallest if tallest else 0
    placed: dict[tuple[int, str], dict[str, Any]] = {}
    for step, nodes in columns.items():
        y = 0.0
        for node in nodes:
            height = max(1.0, node["count"] * scale)
            x = step * COLUMN + 10
            placed[step, node["page"]] = {**node, "x": x, "y": y, "h": height, "out": y, "in": y}
            y += height + GAP
    bands = []
    for link in answer["links"]:
        source = placed.get((link["step"], link["source"]))
        target = placed.get((link["step"] + 1, link["target"]))
        if not source or not target:
            continue
        width = max(1.0, link["count"] * scale)
        x0, x1 = source["x"] + NODE_WIDTH, target["x"]
        y0, y1 = source["out"] + width / 2, target["in"] + width / 2
        source["out"] += width
        target["in"] += width
        middle = (x0 + x1) / 2
        bands.append(
            {
                **link,
                "d": f"M{x0:.1f},{y0:.1f} C{middle:.1f},{y0:.1f} {middle:.1f},{y1:.1f} "
                f"{x1:.1f},{y1:.1f}",
                "w": f"{width:.1f}",
            }
        )
    steps = max(columns, default=0) + 1
    return {
        "nodes": list(placed.values()),
        "bands": bands,
        "width": steps * COLUMN + 160,
        "height": HEIGHT + 20,
        "node_width": NODE_WIDTH,
    }


@site_page()
def site_paths(request: HttpRequest, site: Site) -> HttpResponse:
    """Paths from the session start, from a page or to a page; 400 naming a bad field."""
    params = query_params(request)
    error, answer, layout, query = "", None, None, None
    try:
        zone = periods.site_zone(site.time_zone)
        query = reads.path_query_parse(params, now=datetime.now(UTC), zone=zone)
        answer = reads.paths_answer(site.id, query)
        layout = sankey_layout(answer)
        params = query.params()
    except RangeError as exc:
        error = str(exc)
    context = {
        "site": site,
        "error": error,
        "answer": answer,
        "layout": layout,
        "values": params,
        "entrance": ENTRANCE,
        "range": urlencode(query.period.params()) if query and query.period else "",
        "period": query.period if query else None,
        "range_note": query.note if query else "",
    }
    return render(request, "sessions_app/paths.html", context, status=400 if error else 200)


@site_page()
def site_transitions(request: HttpRequest, site: Site) -> HttpResponse:
    """One page's transitions: pages before, entrances by source, pages after, exits."""
    params = query_params(request)
    error, answer, query = "", None, None
    try:
        zone = periods.site_zone(site.time_zone)
        query = reads.page_query_parse(params, now=datetime.now(UTC), zone=zone)
        answer = reads.transitions_answer(site.id, query)
        params = {**query.params(), "page": query.anchor}
        params.pop(reads.ANCHOR_PARAMS[FROM], None)
    except RangeError as exc:
        # No page yet: the form alone (no error); any other bad field: 400 naming it.
        error = "" if exc.field == "page" and not params.get("page") else str(exc)
    context = {
        "site": site,
        "error": error,
        "answer": answer,
        "values": params,
        "range": urlencode(query.period.params()) if query and query.period else "",
        "period": query.period if query else None,
        "range_note": query.note if query else "",
    }
    return render(request, "sessions_app/transitions.html", context, status=400 if error else 200)
