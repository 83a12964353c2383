"""JSON API under /api/: the analyst pages' data, plus CSV/JSON exports.

Auth: the login session or `Authorization: Token KEY` (/account/tokens/, or manage.py
create_api_token); a token acts as its user, on that user's sites only (permissions.py).
Errors: {"error": "field: reason", "field": ...} with 400/401/403/404.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import APIException, NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler

from sessions_app.domain.aggregates import breakdowns, rolling, totals
from sessions_app.domain.aggregates.kpis import METRICS, Kpis, kpi_cards, metric_param
from sessions_app.domain.ingest import realtime
from sessions_app.domain.permissions import SiteView
from sessions_app.domain.sessions import activity, lists, timeline
from sessions_app.features.analysis import dashboard, explorer
from sessions_app.features.analysis.kpi_report import PeriodReport, period_report, site_period
from sessions_app.features.web import periods
from sessions_app.features.web.params import (
    CURSOR,
    END,
    LIMIT,
    START,
    USER_KEY,
    BadRequest,
    api_int,
    api_time,
    api_uuid,
)
from sessions_app.features.web.periods import COMPARES, PRESETS, Period
from sessions_app.foundation.core.bounds import RangeError


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Return every API error as {"error", "field"} JSON."""
    if isinstance(exc, RangeError | ValueError) and not isinstance(exc, APIException):
        field = getattr(exc, "field", "query")
        message = str(exc).split(": ", 1)[-1] if ": " in str(exc) else str(exc)
        return Response({"error": f"{field}: {message}", "field": field}, status=400)
    response = exception_handler(exc, context)
    if response is not None:
        detail = (
            response.data.get("detail", response.data)
            if isinstance(response.data, dict)
            else response.data
        )
        field = getattr(exc, "field", "auth" if response.status_code in (401, 403) else "path")
        response.data = {"error": f"{field}: {detail}", "field": field}
    return response


class UserSessions(SiteView):
    """A user's sessions newest first, including anonymous ids linked by identify()."""

    @extend_schema(parameters=[USER_KEY, CURSOR, LIMIT], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> Response:
        site = self.site
        linked = lists.identity_links(site_id=site.id, user_id=user_key, limit=19)
        page = lists.sessions_page(
            site_id=site.id,
            user_keys=[user_key, *linked],
            limit=api_int(request.query_params, "limit", 20, low=1, high=1000),
            before=api_uuid(request.query_params, "cursor"),
        )
        return Response(
            {
                "user_key": user_key,
                "linked_anonymous_ids": linked,
                "sessions": page.sessions,
                "next_cursor": page.next_cursor,
            }
        )


class UserProperties(SiteView):
    """A user's properties: the latest value of each identify trait, first and last set."""

    @extend_schema(parameters=[USER_KEY], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> Response:
        site = self.site
        found = lists.user_properties(site_id=site.id, user_key=user_key)
        return Response({"user_key": user_key, "properties": found})


class SessionEvents(SiteView):
    """Every event of a session in time order, with the session's summary.

    The body is the timeline's JSON as built (or materialized) by domain/sessions/timeline.py;
    `X-Timeline-Source` says which: `rows`, `prefix` (a materialized prefix and the rows
    after it) or `materialized`.
    """

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, session_id: uuid.UUID) -> HttpResponseBase:
        found = timeline.session_timeline(site_id=self.site.id, session_id=session_id)
        if found is None:
            raise NotFound("no such session")
        response = HttpResponse(found.body, content_type="application/json")
        response["X-Timeline-Source"] = found.source
        return response


class UserActivity(SiteView):
    """A user's events across time buckets, in time order, with the partitions read, over
    the period (period/from/to in the site's time zone) or start/end (default the last 7
    days; at most 92 days either way)."""

    @extend_schema(
        parameters=[
            USER_KEY,
            *periods.API_PARAMETERS,
            START,
            END,
            CURSOR,
            LIMIT,
            OpenApiParameter("strategy", str, enum=["auto", "in", "parallel", "sequential"]),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> Response:
        site = self.site
        params, now = request.query_params, datetime.now(UTC)
        if any(params.get(name) for name in ("period", "from", "to")):
            zone = periods.site_zone(site.time_zone)
            period = periods.period_param(params, zone=zone, now=now)
            start, end = period.start, period.end
        else:
            end = api_time(params, "end", now, now=now)
            start = api_time(params, "start", end - timedelta(days=7), now=now)
        page = activity.user_activity(
            site_id=site.id,
            user_key=user_key,
            start=start,
            end=end,
            limit=api_int(request.query_params, "limit", 100, low=1, high=1000),
            cursor=api_uuid(request.query_params, "cursor"),
            strategy=request.query_params.get("strategy"),
        )
        return Response(
            {
                "events": page.events,
                "next_cursor": page.next_cursor,
                "strategy": page.strategy,
                "queries": page.queries,
                "partitions": page.partitions,
            }
        )


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


class SiteSessions(SiteView):
    """The session explorer: sessions that started in the period (period/from/to in the
    site's time zone, default the last 7 days, or the old start/end; at most its last 92
    days, `note` says when it was cut), newest first, matching every filter; cursor-paged.

    Filters: the dimensions that filter (foundation/dimensions.py: source, medium, campaign,
    country, device, browser, os: exact values; entry, exit: paths such as /pricing);
    page (a path viewed); event (a custom event done); converted, bot, identified (true/false);
    goal (a goal's id: its sessions, once their hour sealed); replay (true: the sessions
    with a replay recording; false is refused, they carry no mark); duration_min/duration_max
    (seconds), events_min/events_max. `filters`: the query as URL parameters (as the page).
    """

    @staticmethod
    def registry_parameters() -> list[OpenApiParameter]:
        return [OpenApiParameter(name, str) for name in explorer.filter_names()]

    @extend_schema(
        parameters=[
            *periods.API_PARAMETERS,
            START,
            END,
            OpenApiParameter("cursor", str, description="next_cursor of the previous page"),
            OpenApiParameter("limit", OpenApiTypes.INT, description="page size, 1-200"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        params = request.query_params
        zone = periods.site_zone(self.site.time_zone)
        query = explorer.explorer_query_parse(params, now=datetime.now(UTC), zone=zone)
        page = explorer.sessions_explore(
            site_id=self.site.id,
            query=query,
            cursor=request.query_params.get("cursor") or None,
            limit=api_int(
                request.query_params,
                "limit",
                explorer.DEFAULT_LIMIT,
                low=1,
                high=explorer.MAX_LIMIT,
            ),
        )
        return Response(
            {
                "filters": query.params(),
                "time_zone": str(zone),
                "note": query.note,
                "sessions": page.sessions,
                "next_cursor": page.next_cursor,
                "partitions_read": page.partitions_read,
            }
        )


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
    view), visit duration (median within 2.5%, mean; seconds), conversion rate (visits with
    the conversion event / visits); `comparison` counts the compared period only as far
    as the period has gone. `breakdowns`: per source, medium, campaign, country, device,
    browser, os, entry and exit page (the `top` values, the rest as "(other)"), of the
    sessions started in range.
    """

    @extend_schema(
        parameters=[
            OpenApiParameter("period", str, enum=list(PRESETS), description="default 24h"),
            OpenApiParameter("from", OpenApiTypes.DATE, description="custom period's first day"),
            OpenApiParameter("to", OpenApiTypes.DATE, description="custom period's last day"),
            OpenApiParameter("compare", str, enum=list(COMPARES)),
            OpenApiParameter("metric", str, enum=list(METRICS), description="the charted KPI"),
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
                "kpis": _kpis(filtered.kpis if filtered else result.kpis),
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
                        "kpis": _kpis(totals.kpis_of(row.aggregates)),
                    }
                    for row in report["buckets"]
                ],
            }
        )


def _period(period: Period, report: dict[str, Any]) -> dict[str, Any]:
    shown = {name: getattr(period, name) for name in ("key", "label", "start", "end", "compare")}
    return {**shown, "grain": report["width"], "params": period.params()}


def _kpis(kpis: Kpis) -> dict[str, Any]:
    rates = ("views_per_visit", "bounce_rate", "duration_mean", "conversion_rate")
    return {**asdict(kpis), **{key: getattr(kpis, key) for key in rates}}


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
        "kpis": _kpis(previous) if previous is not None else None,
        "cards": kpi_cards(kpis, previous),
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


class UserCounters(SiteView):
    """A user's rolling counts of one event (custom name, or pageview/click) over the
    last 1 h, 24 h, 7 d, 30 d and 12 months, with the partitions each read."""

    @extend_schema(
        parameters=[
            USER_KEY,
            OpenApiParameter(
                "event", str, description="custom event name, or pageview / click", required=True
            ),
            OpenApiParameter("at", OpenApiTypes.DATETIME, description="window end (default now)"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> Response:
        site = self.site
        event_key = (request.query_params.get("event") or "").strip()
        if not event_key or len(event_key) > 128:
            raise BadRequest("event", "an event name of 1-128 characters is required")
        now = datetime.now(UTC)
        at = api_time(request.query_params, "at", now, now=now)
        windows = rolling.rolling_counts(
            site_id=site.id, user_key=user_key, event_key=event_key, now=at
        )
        return Response(
            {
                "user_key": user_key,
                "event": event_key,
                "at": at,
                "windows": [
                    {
                        "window": w.window,
                        "start": w.start,
                        "end": w.end,
                        "count": w.count,
                        "partitions_read": w.partitions_read,
                        "rows_read": w.rows_read,
                        "buckets": _piece_counts(w.pieces),
                    }
                    for w in windows
                ],
            }
        )


def _piece_counts(pieces: list[tuple[str, datetime, datetime]]) -> dict[str, int]:
    """How many buckets of each resolution (and raw ranges) covered a window."""
    counts: dict[str, int] = {}
    for kind, _, _ in pieces:
        counts[kind] = counts.get(kind, 0) + 1
    return counts
