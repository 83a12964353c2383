"""The app's URLs plus /chart-fixture/: a page with KPI-card links and _chart.html over a
chart dict of the data contract (ARCHITECTURE.md, Charts), for tests/e2e/test_range.py
to drive the chart before and apart from the dashboard's own numbers."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

from clickstream.urls import urlpatterns as app_urlpatterns

PAGE = """{% load static %}<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="{% static 'sessions_app/app.css' %}"><title>chart</title></head>
<body><main><nav class="kpis">{% for key, m in chart.metrics.items %}
<a href="?metric={{ key }}" data-metric="{{ key }}">{{ m.label }}</a>{% endfor %}</nav>
{% include "sessions_app/_chart.html" %}</main></body></html>"""

METRICS = {
    "visitors": {"label": "Unique visitors", "format": "count"},
    "pageviews": {"label": "Pageviews", "format": "count"},
    "bounce_rate": {"label": "Bounce rate", "format": "percent"},
    "duration_median": {"label": "Visit duration", "format": "seconds"},
}


def fixture_chart(*, points: int, grain: str, empty: bool = False) -> dict[str, Any]:
    """`points` buckets from 1 Nov 2026 in Europe/Berlin, a wave of visitors (or nothing)
    and the same shape a fifth lower as the comparison."""
    zone = ZoneInfo("Europe/Berlin")
    step = timedelta(hours=1) if grain == "hour" else timedelta(days=1)
    first = datetime(2026, 11, 1, tzinfo=zone)
    buckets = [(first + i * step).isoformat() for i in range(points)]
    wave = [0 if empty else round(1200 + 400 * math.sin(i / 4)) for i in range(points)]
    series = {
        "visitors": wave,
        "pageviews": [3 * v for v in wave],
        "bounce_rate": [None if empty else 0.4 + 0.1 * math.cos(i / 3) for i in range(points)],
        "duration_median": [None if empty else 150 + i for i in range(points)],
    }
    earlier = [(first - points * step + i * step).isoformat() for i in range(points)]
    return {
        "grain": grain,
        "zone": "Europe/Berlin",
        "metric": "visitors",
        "metrics": METRICS,
        "buckets": buckets,
        "states": ["sealed"] * (points - 1) + ["live"],
        "series": series,
        "comparison": {
            "buckets": earlier,
            "series": {k: [None if v is None else v * 0.8 for v in s] for k, s in series.items()},
        },
    }


def chart_fixture(request: HttpRequest) -> HttpResponse:
    points = min(int(request.GET.get("points") or 30), 2000)
    chart = fixture_chart(
        points=points, grain=request.GET.get("grain") or "day", empty="empty" in request.GET
    )
    if request.GET.get("metric") in METRICS:
        chart["metric"] = request.GET["metric"]
    return HttpResponse(engines["django"].from_string(PAGE).render({"chart": chart}, request))


urlpatterns = [path("chart-fixture/", chart_fixture), *app_urlpatterns]
