"""Paths and transitions under /api/ (paths/reads.py): the same numbers as the pages."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.aggregates.paths import FROM, TO
from sessions_app.params import END, START
from sessions_app.paths import reads
from sessions_app.permissions import SiteView


class SitePaths(SiteView):
    """Paths of up to five page views over [start, end) (default the last 7 days, at most
    92): from the session start (no page given), from a page (`from`) or to one (`to`).
    `nodes`/`links` are the Sankey's steps and flows (each step's 8 busiest pages, the
    rest "(other)"; `stopped`: visits that went no further), `paths` the most common whole
    paths. A path counts in the bucket of its last page view (docs/analysis.md)."""

    @extend_schema(
        parameters=[
            START,
            END,
            OpenApiParameter(FROM, str, description="paths starting at this page path"),
            OpenApiParameter(TO, str, description="paths ending at this page path"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        query = reads.path_query_parse(request.query_params, now=datetime.now(UTC))
        return Response(reads.paths_answer(self.site.id, query))


class SiteTransitions(SiteView):
    """One page's transitions over [start, end): its views, the pages before it and the
    entrances by source, the pages after it and the exits (like Matomo's Transitions)."""

    @extend_schema(
        parameters=[START, END, OpenApiParameter("page", str, required=True)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        query = reads.page_query_parse(request.query_params, now=datetime.now(UTC))
        return Response(reads.transitions_answer(self.site.id, query))
