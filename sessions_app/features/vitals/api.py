"""Web vitals under /api/ (features/vitals/reads.py): the same numbers as the Performance page."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import SiteView
from sessions_app.features.vitals import reads
from sessions_app.features.web.periods import API_PARAMETERS, period_param, site_zone

FILTER_PARAMETERS = [
    OpenApiParameter(name, str, description=f"only visitors with this {name}")
    for name in reads.FILTERS
]


def _asked(request: Request, view: SiteView) -> tuple[reads.Period, dict[str, str]]:
    params = {k: str(v) for k, v in request.query_params.items()}
    zone = site_zone(view.site.time_zone)
    return period_param(params, zone=zone, now=datetime.now(UTC)), reads.filters_parse(params)


class SiteVitals(SiteView):
    """Core Web Vitals over the period (period/from/to/compare in the site's time zone):
    per metric (lcp, inp, cls, fcp, ttfb; ms, CLS a score) its p75 (within 1 %), how many
    measured, the good / needs improvement / poor shares by Google's thresholds, the
    comparison period's p75 and the change; `trend` the p75 per bucket; `pages` the pages
    by their p75 of `sort`, worst first. Filters: device, country, browser."""

    @extend_schema(
        parameters=[
            *API_PARAMETERS,
            *FILTER_PARAMETERS,
            OpenApiParameter("sort", str, enum=list(reads.SORTS), description="pages by"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        period, filters = _asked(request, self)
        sort = reads.sort_parse(request.query_params)
        summary = reads.summary_answer(site_id=self.site.id, period=period, filters=filters)
        pages = reads.pages_answer(site_id=self.site.id, period=period, filters=filters, sort=sort)
        return Response(
            {**summary, "pages": pages["pages"], "more_pages": pages["more"], "sort": sort}
        )


class SitePageVitals(SiteView):
    """One page's Core Web Vitals over the period, and per metric (lcp, inp, cls) the
    elements that caused it, worst first: times, of them poor, the mean value."""

    @extend_schema(
        parameters=[
            *API_PARAMETERS,
            *FILTER_PARAMETERS,
            OpenApiParameter("page", str, required=True, description="a page path"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        period, filters = _asked(request, self)
        page = reads.page_parse(request.query_params)
        return Response(
            reads.page_answer(site_id=self.site.id, period=period, filters=filters, page=page)
        )
