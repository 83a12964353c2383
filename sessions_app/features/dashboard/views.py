"""The dashboard page: a site's KPIs, chart, breakdowns and goals over a period."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.domain.aggregates import breakdowns
from sessions_app.domain.aggregates.kpis import CONVERSION, kpi_cards, metric_param
from sessions_app.domain.aggregates.report import MAX_LIVE_HOURS
from sessions_app.domain.ingest import realtime
from sessions_app.domain.permissions import site_page
from sessions_app.features.analysis import dashboard as dashboard_filters
from sessions_app.features.analysis import goal_table
from sessions_app.features.analysis.kpi_report import (
    PeriodReport,
    chart_data,
    period_report,
    site_period,
)
from sessions_app.features.web.params import query_params
from sessions_app.foundation import dimensions
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site


def _breakdown_charts(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each dimension's values as table rows, each carrying its bar (sessions against the
    dimension's most: `share`, a percentage of the row's width)."""
    charts = []
    for name, values in rows.items():
        peak = max((r["sessions"] for r in values), default=0) or 1
        bars = [
            {
                **r,
                "share": round(100 * r["sessions"] / peak, 1),
            }
            for r in values
        ]
        dimension = dimensions.named(name)
        charts.append(
            {"name": name, "title": dimension.title, "note": dimension.note, "bars": bars}
        )
    return charts


@site_page()
def dashboard(request: HttpRequest, site: Site) -> HttpResponse:
    context = dashboard_context(site, params=query_params(request), own=request.GET)
    return render(request, "sessions_app/dashboard.html", context)


def dashboard_context(
    site: Site, *, params: Mapping[str, str], own: Mapping[str, str], latest: bool = True
) -> dict[str, Any]:
    """What the dashboard page shows for these parameters (`own`: the page's own URL
    parameters, which its links carry); `latest`: with the latest sessions (a share
    link shows none)."""
    now = datetime.now(UTC)
    errors: list[str] = []
    try:
        period, zone_note = site_period(params, site=site, now=now)
    except RangeError as exc:
        period, zone_note = site_period({}, site=site, now=now)
        errors.append(f"{exc}; showing {period.label.lower()} instead")
    metric = metric_param(params.get("metric"))
    shown = dashboard_filters.dashboard_context(
        site=site, period=period, params=params, latest=latest
    )
    context: dict[str, Any] = {
        "site": site,
        "period": period,
        "zone_note": zone_note,
        "metric": metric,
        "live_cap": MAX_LIVE_HOURS,
        "latest_zone": period.zone.key,
        **shown,
    }
    try:
        # Filtered, the page shows the filtered breakdowns only: the whole site's are not read.
        result = period_report(site=site, period=period, breakdown=shown["filtered"] is None)
    except RangeError as exc:
        errors.append(str(exc))
    else:
        context.update(_dashboard_numbers(own, result, metric, shown["filtered"]))
        context["goals"] = goal_table.dashboard_goals(
            site_id=site.id,
            period=period,
            params=params,
            answer=shown["filtered"] or result,
        )
    context["error"] = "; ".join(errors)
    context["now"] = realtime.realtime_now(site_id=site.id, now=now)
    context["realtime_every"] = settings.REALTIME_REFRESH_MS
    context["realtime_seconds"] = settings.REALTIME_REFRESH_MS / 1000
    return context


def _dashboard_numbers(
    own: Mapping[str, str],
    result: PeriodReport,
    metric: str,
    filtered: dashboard_filters.FilteredAnswer | None,
) -> dict[str, Any]:
    """The dashboard's report, KPI cards (each a link that charts it), chart data; with
    filters, the filtered answer's KPIs, chart and breakdowns."""
    report = result.current
    width = report["width"]
    breakdown = breakdowns.breakdown_rows(report["breakdowns"], top=8)
    report["breakdown_charts"] = _breakdown_charts(filtered.breakdowns if filtered else breakdown)
    states = [r.state for r in report["buckets"]]
    report["sealed"], report["live"] = states.count("sealed"), states.count("live")
    cards = (
        kpi_cards(filtered.kpis, filtered.previous, conversion=result.conversion)
        if filtered
        else result.cards()
    )
    for card in cards:
        query = {**own, "metric": card["key"]}
        card["href"] = "#goals" if card["key"] == CONVERSION else "?" + urlencode(query)
    before = result.period.comparison()
    return {
        "report": report,
        "width": width,
        "cards": cards,
        "comparison_label": before.label if before is not None else "",
        "conversion": result.conversion,
        "chart": filtered.chart if filtered else chart_data(result, metric=metric),
    }
