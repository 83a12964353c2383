"""The Heatmaps page: one page's clicks by layout, its rage- and dead-clicked elements,
its scroll depth, and "View on page" (the overlay on the customer's own page)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from sessions_app.core import timebuckets
from sessions_app.core.bounds import RangeError
from sessions_app.heatmaps import reads
from sessions_app.ingest.enrich import VIEWPORTS
from sessions_app.models import Site
from sessions_app.permissions import site_page

TOP_FRUSTRATED = 20
BAR_PX = 18  # the trend's tallest bar


def _bars(counts: list[int]) -> dict[str, Any]:
    """The trend as SVG bars, a day each: x, y, height and the count (a 0 is a 1 px dot)."""
    top = max(counts, default=0) or 1
    bars = []
    for i, n in enumerate(counts):
        h = max(1, round(n * BAR_PX / top))
        bars.append({"x": 3 * i, "y": BAR_PX - h, "h": h, "count": n})
    return {"width": 3 * len(counts), "height": BAR_PX, "bars": bars}


@site_page()
def site_heatmaps(request: HttpRequest, site: Site) -> HttpResponse:
    """A page's heatmap summary; 400 naming a bad field."""
    page = request.GET.get("page", "")
    vp = request.GET.get("vp", VIEWPORTS[-1])
    days_text = request.GET.get("days", "30")
    error, answer, view_url, heat = "", None, "", None
    trend: dict[str, list[int]] = {}
    if page:
        try:
            days = int(days_text) if days_text.isdigit() else 0
            answer, heat = reads.page_answer(
                site_id=site.id, page=page, vp=vp, days=days, now=timezone.now(), samples=True
            )
            _, trend = reads.daily_flags(
                site_id=site.id, page=page, vp=vp, start=answer["start"], end=answer["end"]
            )
        except RangeError as exc:
            error = str(exc)
    if answer and site.allowed_origins:
        token = reads.token_for(site_id=site.id, salt=site.heatmap_salt, page=page)
        view_url = f"{site.allowed_origins[0].rstrip('/')}{quote(page)}#cs-heatmap={token}"
    frustrated = sorted(
        (e for e in (answer or {}).get("elements", []) if e["rage"] or e["dead"]),
        key=lambda e: (-(e["rage"] + e["dead"]), e["selector"]),
    )[:TOP_FRUSTRATED]
    samples = heat.samples if heat else {}
    for element in frustrated:
        label = element["selector"]
        element["trend"] = _bars(trend.get(label, []))
        element["sessions"] = [
            {"at": timebuckets.from_epoch_ms(ms), "event_id": event_id,
             "session_id": session_id, "rage": rage, "dead": dead}
            for ms, event_id, session_id, _, rage, dead in samples.get(label, [])
        ]  # fmt: skip
    reach = (answer or {}).get("scroll", {}).get("reach", [])
    context = {
        "site": site,
        "error": error,
        "answer": answer,
        "values": {"page": page, "vp": vp, "days": days_text},
        "viewports": VIEWPORTS,
        "day_choices": reads.DAYS,
        "frustrated": frustrated,
        "depths": [{"percent": p, "share": round(100 * reach[p][1])} for p in (25, 50, 75, 100)]
        if reach
        else [],
        "view_url": view_url,
    }
    return render(request, "sessions_app/heatmaps.html", context, status=400 if error else 200)
