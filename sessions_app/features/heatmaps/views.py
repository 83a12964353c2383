"""The Heatmaps page: one page's clicks by layout, its rage- and dead-clicked elements,
its scroll depth, and "View on page" (the overlay on the customer's own page)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from sessions_app.domain.ingest.enrich import VIEWPORTS
from sessions_app.domain.permissions import site_page
from sessions_app.features.analysis.kpi_report import most_viewed
from sessions_app.features.heatmaps import ranges, reads
from sessions_app.features.web import periods
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

TOP_FRUSTRATED = 20
TOP_CLICKS = 10
BAR_PX = 18  # the trend's tallest bar


def _bars(counts: list[int]) -> dict[str, Any]:
    """The trend as SVG bars, a day each: x, y, height and the count (a 0 is a 1 px dot)."""
    top = max(counts, default=0) or 1
    bars = []
    for i, n in enumerate(counts):
        h = max(1, round(n * BAR_PX / top))
        bars.append({"x": 3 * i, "y": BAR_PX - h, "h": h, "count": n})
    return {"width": 3 * len(counts), "height": BAR_PX, "bars": bars}


def _top_clicks(
    elements: list[dict[str, Any]], params: dict[str, str], element: str
) -> list[dict[str, Any]]:
    """The page's most clicked elements (only `element` when the page is filtered by it),
    each with its share of the clicks and the link that filters the page by it."""
    total = sum(e["clicks"] for e in elements) or 1
    shown = [e for e in elements if e["selector"] == element] if element else elements
    return [
        {
            **e,
            "share": round(100 * e["clicks"] / total, 1),
            "href": "?" + urlencode({**params, "element": e["selector"]}),
        }
        for e in shown[:TOP_CLICKS]
    ]


def _samples(site: Site, frustrated: list[dict[str, Any]], samples: dict[str, Any]) -> None:
    """Each element's latest rage/dead clicks, in their sessions: `replay` when the session
    has a recording (its link opens the player at `ms`, the click's moment)."""
    for element in frustrated:
        element["sessions"] = [
            {
                "at": timebuckets.from_epoch_ms(ms),
                "ms": ms,
                "event_id": event_id,
                "session_id": session_id,
                "rage": rage,
                "dead": dead,
            }
            for ms, event_id, session_id, _, rage, dead in samples.get(element["selector"], [])
        ]
    listed = [s for e in frustrated for s in e["sessions"]]  # 20 elements x 10: 200 at most
    recorded = reads.recorded(site_id=site.id, session_ids=[s["session_id"] for s in listed])
    for sample in listed:
        sample["replay"] = str(sample["session_id"]) in recorded


@site_page()
def site_heatmaps(request: HttpRequest, site: Site) -> HttpResponse:
    """A page's heatmap summary over the period (every page's range picker); 400 naming
    a bad field."""
    page = request.GET.get("page", "")
    chosen = request.GET.get("element", "")  # a top click's filter: its label
    vp = request.GET.get("vp", VIEWPORTS[-1])
    error, answer, view_url, heat, period, note = "", None, "", None, None, ""
    trend: dict[str, list[int]] = {}
    covered: ranges.Covered | None = None
    try:
        params = {k: str(v) for k, v in request.GET.items()}
        zone = periods.site_zone(site.time_zone)
        covered = ranges.heatmap_range(
            params, zone=zone, now=timezone.now(), default=periods.DEFAULT_PRESET
        )
        period, start, end, note = covered.period, covered.start, covered.end, covered.note
    except RangeError as exc:
        error = str(exc)
    if page and not error:
        try:
            answer, heat = reads.range_answer(
                site_id=site.id, page=page, vp=vp, start=start, end=end, samples=True
            )
            _, trend = reads.daily_flags(
                site_id=site.id, page=page, vp=vp, start=answer["start"], end=answer["end"]
            )
        except RangeError as exc:
            error = str(exc)
    pages = []
    if not page and not error and period is not None:
        pages = most_viewed(site=site, period=period)
    if answer and covered and site.allowed_origins:
        token = reads.token_for(site_id=site.id, salt=site.heatmap_salt, page=page)
        fragment = ranges.overlay_fragment(token, covered)
        view_url = f"{site.allowed_origins[0].rstrip('/')}{quote(page)}#{fragment}"
    elements = (answer or {}).get("elements", [])
    frustrated = sorted(
        (
            e
            for e in elements
            if (e["rage"] or e["dead"]) and (not chosen or e["selector"] == chosen)
        ),
        key=lambda e: (-(e["rage"] + e["dead"]), e["selector"]),
    )[:TOP_FRUSTRATED]
    for element in frustrated:
        element["trend"] = _bars(trend.get(element["selector"], []))
    _samples(site, frustrated, heat.samples if heat else {})
    reach = (answer or {}).get("scroll", {}).get("reach", [])
    context = {
        "site": site,
        "error": error,
        "answer": answer,
        "values": {"page": page, "vp": vp},
        "element": chosen,
        "element_name": next((e["text"] for e in elements if e["selector"] == chosen), ""),
        "without_element": "?" + urlencode({k: v for k, v in params.items() if k != "element"}),
        "top_clicks": _top_clicks(
            elements, {k: v for k, v in params.items() if k != "cursor"}, chosen
        ),
        "viewports": VIEWPORTS,
        "period": period,
        "range_note": note,
        "pages": pages,
        "range": urlencode({**period.params(), "vp": vp}) if period else "",
        "frustrated": frustrated,
        "depths": [{"percent": p, "share": round(100 * reach[p][1])} for p in (25, 50, 75, 100)]
        if reach
        else [],
        "view_url": view_url,
    }
    return render(request, "sessions_app/heatmaps.html", context, status=400 if error else 200)
