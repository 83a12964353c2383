"""The sessions API: a site's sessions, a session's events and their export."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import SiteView
from sessions_app.domain.sessions import timeline
from sessions_app.features.analysis import explorer
from sessions_app.features.web import periods
from sessions_app.features.web.exports import Cap, export_response
from sessions_app.features.web.params import (
    END,
    START,
    api_int,
)


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


class SessionExport(SiteView):
    """A session's events as CSV or JSON."""

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=["csv", "json"])],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, site_id: uuid.UUID, session_id: uuid.UUID) -> HttpResponseBase:
        found = timeline.session_timeline(site_id=self.site.id, session_id=session_id)
        if found is None:
            raise NotFound("no such session")
        summary, events = found.decoded()
        cap = Cap()
        if summary and summary["event_count"] > len(events):
            cap.reason = f"the first {len(events)} of {summary['event_count']} events"
        fmt = request.query_params.get("format", "csv")
        return export_response(iter(events), fmt, f"session-{session_id}", cap=cap)
