"""The Paths page (a Sankey drawn as server-side SVG) and the Transitions page."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.domain.aggregates.path_grams import ENTRANCE
from sessions_app.domain.aggregates.paths import FROM
from sessions_app.domain.permissions import site_page
from sessions_app.features.analysis.kpi_report import most_viewed
from sessions_app.features.paths import reads
from sessions_app.features.web import periods
from sessions_app.features.web.params import query_params
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

COLUMN = 190  # px between steps
NODE_WIDTH = 14
HEIGHT = 420
GAP = 10  # px between the nodes of a step
LINE = 16  # px a label takes: a step's nodes start at least this far apart
LABEL_GAP = 4  # px between a node and its label, and a label and the next column
LABEL_ROOM = COLUMN - NODE_WIDTH - 2 * LABEL_GAP  # px a label may take
FONT_PX = 12  # the labels' font size (app.css `.sankey text`)


def text_px(text: str) -> float:
    """A generous estimate of the width of text in px at FONT_PX in a sans-serif font:
    wide (East Asian, emoji) characters a full em and more, capitals and wide letters
    nearly one, punctuation 0.42, others 0.62; marks nothing. The page's script (ui.js)
    then fits the label exactly."""
    ems = 0.0
    for char in text:
        if unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        if unicodedata.east_asian_width(char) in ("W", "F") or ord(char) >= 0x1F000:
            ems += 1.25
        elif char.isupper() or char in "mwMW@%&#":
            ems += 0.95
        elif char in " .,:;'|!()[]/-":
            ems += 0.42
        else:
            ems += 0.62
    return ems * FONT_PX


def cut_middle(chars: list[str], keep: int) -> str:
    """`keep` of the characters around an ellipsis: a third from the start, the rest from
    the end (a path's last segment tells pages apart)."""
    head = keep // 3
    return "".join(chars[:head]) + "…" + "".join(chars[len(chars) - (keep - head) :])


def fit_label(page: str, suffix: str, room: float = LABEL_ROOM) -> str:
    """The page cut in the middle so that page + suffix fits in room px (the suffix, its
    count, is kept whole)."""
    if text_px(page + suffix) <= room:
        return page
    chars = list(page)
    low, high = 0, len(chars) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if text_px(cut_middle(chars, middle) + suffix) <= room:
            low = middle
        else:
            high = middle - 1
    return cut_middle(chars, low)


def _label_suffix(node: dict[str, Any]) -> str:
    left = f", {node['stopped']:,} left" if node.get("stopped") else ""
    return f" ({node['count']:,}{left})"


def sankey_layout(answer: dict[str, Any]) -> dict[str, Any]:
    """Place the Sankey: a column per step, nodes stacked by count (at least a label's
    line apart), flows as bands whose width is their count (one scale for the whole
    drawing); each label right of its node, cut to end before the next column."""
    columns: dict[int, list[dict[str, Any]]] = {}
    for node in answer["nodes"]:
        columns.setdefault(node["step"], []).append(node)
    tallest = max((sum(n["count"] for n in c) for c in columns.values()), default=0)
    most = max((len(c) for c in columns.values()), default=1)
    scale = (HEIGHT - GAP * most) / tallest if tallest else 0
    placed: dict[tuple[int, str], dict[str, Any]] = {}
    bottom = 0.0
    for step, nodes in columns.items():
        y = 0.0
        for node in nodes:
            height = max(1.0, node["count"] * scale)
            x = step * COLUMN + 10
            suffix = _label_suffix(node)
            label = {"label": fit_label(node["page"], suffix), "suffix": suffix}
            placed[step, node["page"]] = {
                **node,
                **label,
                "x": x,
                "y": y,
                "h": height,
                "out": y,
                "in": y,
                "label_x": x + NODE_WIDTH + LABEL_GAP,
            }
            y += max(height, LINE) + GAP
        bottom = max(bottom, y)
    steps = max(columns, default=0) + 1
    return {
        "nodes": list(placed.values()),
        "bands": _bands(answer["links"], placed, scale),
        "width": (steps - 1) * COLUMN + 10 + NODE_WIDTH + LABEL_GAP + LABEL_ROOM,
        "height": max(HEIGHT, bottom) + 20,
        "node_width": NODE_WIDTH,
        "label_room": LABEL_ROOM,
        "steps": steps,
    }


def _bands(
    links: list[dict[str, Any]], placed: dict[tuple[int, str], dict[str, Any]], scale: float
) -> list[dict[str, Any]]:
    """The flows between placed nodes, each a cubic band as wide as its count."""
    bands = []
    for link in links:
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
    return bands


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
        # No page yet: the most viewed pages to start from (no error); any other bad
        # field: 400 naming it.
        error = "" if exc.field == "page" and not params.get("page") else str(exc)
    pages = []
    if answer is None and not error:
        try:
            query = reads.path_query_parse(params, now=datetime.now(UTC), zone=zone)
            pages = most_viewed(site=site, period=query.period) if query.period else []
        except RangeError as exc:
            error = str(exc)
    context = {
        "site": site,
        "error": error,
        "answer": answer,
        "pages": pages,
        "values": params,
        "range": urlencode(query.period.params()) if query and query.period else "",
        "period": query.period if query else None,
        "range_note": query.note if query else "",
    }
    return render(request, "sessions_app/transitions.html", context, status=400 if error else 200)
