"""The dashboard's API: the report over a period (KPIs, comparison, breakdowns) and the
realtime count."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.aggregates import breakdowns, totals
from sessions_app.domain.aggregates.kpis import CHARTED, Kpis, kpi_cards, metric_param
from sessions_app.domain.ingest import realtime
from sessions_app.domain.permissions import SiteView
from sessions_app.features.analysis import dashboard
from sessions_app.features.analysis.kpi_report import PeriodReport, period_report, site_period
from sessions_app.features.web.params import (
    END,
    START,
    BadRequest,
    api_int,
)
from sessions_app.features.web.periods import COMPARES, PRESETS, Period


def _aggregates(result: Any, *, with_details: bool) -> dict[str, Any]:
    payload = {
        "events": result.events,
        "sessions_started": result.sessions_started,
        "users": result.users,
        "bounces": result.bounces,
        "conversions": result.conversions,
        "by_type": result.by_type,
    }
    if with_details:
        payload.update(
            by_name=result.by_name,
            durations=result.durations,
            top_pages=result.top_pages,
            top_clicks=result.top_clicks,
        )
    return payload


class SiteRealtime(SiteView):
    """Visitors of the last five minutes and the pages they viewed most (Redis, per minute;
    the dashboard polls it). Bots are left out."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        now = realtime.realtime_now(site_id=self.site.id, now=datetime.now(UTC))
        pages = [{"path": path, "views": views} for path, views in now.pages]
        return Response({"visitors": now.visitors, "minutes": now.minutes, "pages": pages})


class SiteReport(SiteView):
    """A site's numbers over a period, as the dashboard shows them: KPIs against the
    comparison period, then per bucket (hour, day or month of the site's time zone), each
    saying whether it is sealed, live or pending.

    The period takes the pages' parameter names (period, from, to, compare; start/end
    for an exact range), default the last 24 hours by hour; `width` (hour or day) still
    picks the buckets. Sealed buckets are read from the aggregates their seal stored;
    unsealed hours are counted from raw events now (at most 72 a request; later ones
    "pending"). Unique visitors across buckets are a HyperLogLog estimate. `kpis`:
    visitors, visits, pageviews, views per visit, bounce rate (visits with at most one page
    view), visit duration (median within 2.5%, mean; seconds), conversion rate (visits that
    reached one of the site's goals / visits; null on a site without goals, and
    `conversion_goal` says which: the goal's name, or "any goal"); `comparison` counts the
    compared period only as far as the period has gone. `breakdowns`: per source, medium,
    campaign, country, device, browser, os, entry and exit page (the `top` values, the rest
    as "(other)"), of the sessions started in range.
    """

    @extend_schema(
        parameters=[
            OpenApiParameter("period", str, enum=list(PRESETS), description="default 24h"),
            OpenApiParameter("from", OpenApiTypes.DATE, description="custom period's first day"),
            OpenApiParameter("to", OpenApiTypes.DATE, description="custom period's last day"),
            OpenApiParameter("compare", str, enum=list(COMPARES), description="default previous"),
            OpenApiParameter("metric", str, enum=list(CHARTED), description="the charted KPI"),
            START,
            END,
            OpenApiParameter("width", str, enum=["hour", "day"]),
            OpenApiParameter("top", OpenApiTypes.INT, description="values per breakdown, 1-50"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        site, params = self.site, request.query_params
        period, zone_note = site_period(params, site=site, now=datetime.now(UTC), default="24h")
        # An exact range without a width gets hours, as before periods (old scripts).
        old = bool(params.get("start") or params.get("end")) and not params.get("period")
        width = params.get("width") or ("hour" if old else None)
        if width not in (None, "hour", "day"):
            raise BadRequest("width", "hour or day")
        filters = dashboard.dashboard_filters(params)
        result = period_report(site=site, period=period, grain=width)
        report = result.current
        filtered = None
        if filters:  # the page's filtered answer: KPIs of the matching sessions
            filtered = dashboard.dashboard_filtered(site=site, period=period, filters=filters)
        return Response(
            {
                "period": _period(result.period, report),
                "time_zone": str(period.zone),
                "zone_note": zone_note,
                "filters": filters,
                "filtered": _filtered(filtered),
                "metric": metric_param(params.get("metric")),
                "conversion_goal": result.conversion,
                "kpis": _kpis(filtered.kpis if filtered else result.kpis, result.conversion),
                "comparison": _comparison(result, filtered),
                "start": report["start"],
                "end": report["end"],
                "width": report["width"],
                "live_hours": report["live_hours"],
                "raw_partitions_read": report["raw_partitions_read"],
                "pending": report["pending"],
                "totals": _aggregates(report["totals"], with_details=True),
                "breakdown_live_hours": report["breakdown_live_hours"],
                "breakdowns": breakdowns.breakdown_rows(
                    report["breakdowns"],
                    top=api_int(params, "top", 10, low=1, high=breakdowns.STORED_TOP),
                ),
                "buckets": [
                    {
                        "bucket": row.bucket,
                        "state": row.state,
                        **_aggregates(row.aggregates, with_details=False),
                        "kpis": _kpis(totals.kpis_of(row.aggregates), result.conversion),
                    }
                    for row in report["buckets"]
                ],
            }
        )


def _period(period: Period, report: dict[str, Any]) -> dict[str, Any]:
    shown = {name: getattr(period, name) for name in ("key", "label", "start", "end", "compare")}
    return {**shown, "grain": report["width"], "params": period.params()}


def _kpis(kpis: Kpis, conversion: str | None) -> dict[str, Any]:
    """The KPIs and their rates; no conversion rate on a site without goals."""
    rates = ("views_per_visit", "bounce_rate", "duration_mean", "conversion_rate")
    found = {**asdict(kpis), **{key: getattr(kpis, key) for key in rates}}
    if conversion is None:
        found["conversion_rate"] = None
    return found


def _comparison(
    result: PeriodReport, filtered: dashboard.FilteredAnswer | None
) -> dict[str, Any] | None:
    before = result.period.comparison()
    if before is None or result.previous is None:
        return None
    kpis: Kpis = result.kpis
    previous: Kpis | None = result.previous
    if filtered is not None:
        kpis, previous = filtered.kpis, filtered.previous
    return {
        "start": before.start,
        "end": before.end,
        "elapsed_end": before.elapsed_end,
        "kpis": _kpis(previous, result.conversion) if previous is not None else None,
        "cards": kpi_cards(kpis, previous, conversion=result.conversion),
    }


def _filtered(answer: dashboard.FilteredAnswer | None) -> dict[str, Any] | None:
    """How a filtered answer was counted (sealed: its KPIs from one value's sealed counts)."""
    if answer is None:
        return None
    return {
        "partitions_read": answer.counted.partitions_read,
        "cut_days": answer.cut_days,
        "sealed": answer.sealed,
    }
