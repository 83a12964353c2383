"""Paths and transitions under /api/ (features/paths/reads.py): the same numbers as the pages."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import SiteView
from sessions_app.features.paths import reads
from sessions_app.features.web.params import END, START
from sessions_app.features.web.periods import API_PARAMETERS, site_zone


class SitePaths(SiteView):
    """Paths of up to five page views over the period (period/from/to in the site's time
    zone, default the last 7 days, or the old start/end; at most its last 92 days, `note`
    says when it was cut): from the session start (no page given), from a page
    (`from_page`) or to one (`to_page`; an old link's `from` / `to` holding a path or URL
    still names the page).
    `nodes`/`links` are the Sankey's steps and flows (each step's 8 busiest pages, the
    rest "(other)"; `stopped`: visits that went no further), `paths` the most common whole
    paths. A path counts in the bucket of its last page view (docs/analysis.md)."""

    @extend_schema(
        parameters=[
            *API_PARAMETERS,
            START,
            END,
            OpenApiParameter("from_page", str, description="paths starting at this page path"),
            OpenApiParameter("to_page", str, description="paths ending at this page path"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        zone = site_zone(self.site.time_zone)
        query = reads.path_query_parse(request.query_params, now=datetime.now(UTC), zone=zone)
        return Response({**reads.paths_answer(self.site.id, query), "note": query.note})


class SiteTransitions(SiteView):
    """One page's transitions over the period (as for paths): its views, the pages before it and the
    entrances by source, the pages after it and the exits (like Matomo's Transitions)."""

    @extend_schema(
        parameters=[*API_PARAMETERS, START, END, OpenApiParameter("page", str, required=True)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        zone = site_zone(self.site.time_zone)
        query = reads.page_query_parse(request.query_params, now=datetime.now(UTC), zone=zone)
        return Response({**reads.transitions_answer(self.site.id, query), "note": query.note})
