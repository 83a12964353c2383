"""Paths and transitions under /api/ (analysis/paths.py): the same numbers as the pages."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.aggregates.paths import FROM, TO
from sessions_app.analysis import paths
from sessions_app.api.views import END, START, SiteView


def paths_answer(site_id: uuid.UUID, query: paths.PathQuery) -> dict[str, Any]:
    """A Sankey of the paths from (or to) the query's page and its most common whole paths."""
    row, live = paths.range_row(site_id=site_id, query=query)
    return {
        "query": query.params(),
        **paths.sankey(row, side=query.side, anchor=query.anchor),
        "paths": paths.top_paths(row, side=query.side, anchor=query.anchor),
        "dropped": row.dropped,
        "live_hours": live,
    }


def transitions_answer(site_id: uuid.UUID, query: paths.PathQuery) -> dict[str, Any]:
    """Where the visitors of one page came from and went next."""
    from_row, live = paths.range_row(site_id=site_id, query=query)
    to_row, _ = paths.range_row(site_id=site_id, query=query, side=TO)
    return {
        "query": query.params(),
        **paths.transitions(from_row, to_row, page=query.anchor),
        "live_hours": live,
    }


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
        query = paths.path_query_parse(request.query_params, now=datetime.now(UTC))
        return Response(paths_answer(self.site.id, query))


class SiteTransitions(SiteView):
    """One page's transitions over [start, end): its views, the pages before it and the
    entrances by source, the pages after it and the exits (like Matomo's Transitions)."""

    @extend_schema(
        parameters=[START, END, OpenApiParameter("page", str, required=True)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        query = paths.page_query_parse(request.query_params, now=datetime.now(UTC))
        return Response(transitions_answer(self.site.id, query))
