"""The users API: a user's sessions, properties, activity and counters, and their exports."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.aggregates import rolling
from sessions_app.domain.permissions import SiteView
from sessions_app.domain.sessions import activity, lists
from sessions_app.features.web import exports, periods
from sessions_app.features.web.exports import (
    PROPERTY_FIELDS,
    Cap,
    export_response,
)
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


class ActivityExport(SiteView):
    """A user's activity over a range as CSV or JSON (at most 100,000 events)."""

    @extend_schema(
        parameters=[USER_KEY, START, END, OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> HttpResponseBase:
        site = self.site
        params, now = request.query_params, datetime.now(UTC)
        end = api_time(params, "end", now, now=now)
        start = api_time(params, "start", end - timedelta(days=7), now=now)
        activity.user_activity(
            site_id=site.id, user_key=user_key, start=start, end=end, limit=1
        )  # validates the range before streaming starts

        cap = Cap()

        def rows() -> Iterator[dict[str, Any]]:
            cursor, sent = None, 0
            while True:
                page = activity.user_activity(
                    site_id=site.id,
                    user_key=user_key,
                    start=start,
                    end=end,
                    limit=min(1000, exports.EXPORT_MAX_EVENTS - sent),
                    cursor=cursor,
                )
                yield from page.events
                sent += len(page.events)
                if page.next_cursor is None:
                    return
                if sent >= exports.EXPORT_MAX_EVENTS:
                    cap.reason = f"at most {exports.EXPORT_MAX_EVENTS} events; narrow start and end"
                    return
                cursor = page.next_cursor

        fmt = request.query_params.get("format", "csv")
        return export_response(rows(), fmt, f"activity-{user_key}", cap=cap)


class PropertiesExport(SiteView):
    """A user's properties as CSV (value as JSON) or JSON."""

    @extend_schema(
        parameters=[USER_KEY, OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, user_key: str) -> HttpResponseBase:
        site = self.site
        found = lists.user_properties(site_id=site.id, user_key=user_key)
        return export_response(
            iter(found),
            request.query_params.get("format", "csv"),
            f"properties-{user_key}",
            PROPERTY_FIELDS,
        )
