"""Funnels under /api/: saved definitions (create, read, edit, delete), results and the
units behind every step (analysis/funnels.py)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.analysis import funnel_defs, funnels
from sessions_app.analysis.funnel_spec import DefinitionSerializer
from sessions_app.analysis.funnel_table import split_names
from sessions_app.analysis.params import iso, range_param
from sessions_app.api.views import END, START, SiteView, _int
from sessions_app.core.bounds import RangeError
from sessions_app.models import Funnel, Site
from sessions_app.permissions import ADMIN

DEFAULT_SPAN = timedelta(days=30)
MAX_UNITS_PAGE = 200


def funnel_range(params: Mapping[str, str]) -> tuple[datetime, datetime]:
    """start/end (ISO-8601; default the last 30 days; at most 92)."""
    return range_param(params, now=datetime.now(UTC), default_span=DEFAULT_SPAN)


def funnel_result(site: Site, funnel: Funnel, params: Mapping[str, str]) -> dict[str, Any]:
    """The funnel's numbers over the range in `params` (breakdown= one dimension)."""
    start, end = funnel_range(params)
    breakdown = params.get("breakdown") or None
    if breakdown and breakdown not in split_names():
        raise RangeError("breakdown", f"one of {', '.join(split_names())}")
    assert funnel.current is not None
    result = funnels.funnel_units(site=site, version=funnel.current, start=start, end=end)
    return {
        "funnel": funnel_defs.funnel_json(funnel),
        "start": iso(start.replace(microsecond=0)),
        "end": iso(end),
        **funnels.funnel_summary(funnel.current.definition, result, breakdown=breakdown),
    }


def _whole(params: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(params.get(name) or default)
    except ValueError:
        raise RangeError(name, "not a whole number") from None


def funnel_unit_page(
    site: Site, funnel: Funnel, params: Mapping[str, str], *, limit: int
) -> dict[str, Any]:
    """One page of the units that reached a step (or dropped off after it)."""
    start, end = funnel_range(params)
    assert funnel.current is not None
    steps = len(funnel.current.definition["steps"])
    step, offset = _whole(params, "step", 1), _whole(params, "cursor", 0)
    if not 1 <= step <= steps:
        raise RangeError("step", f"between 1 and {steps}")
    if not 0 <= offset <= 1_000_000:
        raise RangeError("cursor", "not a cursor this API returned")
    outcome = params.get("outcome") or "reached"
    result = funnels.funnel_units(site=site, version=funnel.current, start=start, end=end)
    rows, following = funnels.units_page(
        result, step=step, outcome=outcome, offset=offset, limit=limit
    )
    return {
        "step": step,
        "outcome": outcome,
        "units": rows,
        "next_cursor": str(following) if following is not None else None,
        "pending_days": [d.date().isoformat() for d in result.days_pending],
    }


class FunnelWrite(serializers.Serializer):
    """A funnel as POSTed or PUT: its name and definition (analysis/funnel_spec.py)."""

    name = serializers.CharField(max_length=100, required=False)
    definition = DefinitionSerializer(required=False)


class SiteFunnels(SiteView):
    """A site's saved funnels (GET) and a new one (POST {name, definition}, the site's
    admins only): 2-10 steps, each a page view (path; match exact, prefix or pattern), a
    click (selector or text) or a custom event (name), with optional property conditions
    (key, op eq / neq / contains / exists, value); count_by user or session; window
    session, or hours / days."""

    edit_role = ADMIN

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="api_sites_funnels_list")
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        found = Funnel.objects.filter(site=self.site).select_related("current")
        return Response({"funnels": [funnel_defs.funnel_json(f) for f in found]})

    @extend_schema(request=FunnelWrite, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, site_id: uuid.UUID) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        funnel = funnel_defs.funnel_create(
            site=self.site, name=body.get("name"), definition=body.get("definition"),
            user=request.user,
        )  # fmt: skip
        return Response(funnel_defs.funnel_json(funnel), status=201)


class SiteFunnel(SiteView):
    """One funnel: GET, PUT {name?, definition?} (a changed definition is a new version),
    DELETE; PUT and DELETE are for the site's admins."""

    edit_role = ADMIN

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        return Response(funnel_defs.funnel_json(funnel_defs.funnel_of(self.site, funnel_id)))

    @extend_schema(request=FunnelWrite, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        funnel = funnel_defs.funnel_of(self.site, funnel_id)
        body = request.data if isinstance(request.data, dict) else {}
        funnel_defs.funnel_update(
            funnel=funnel, name=body.get("name"), definition=body.get("definition")
        )
        return Response(funnel_defs.funnel_json(funnel))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        funnel_defs.funnel_of(self.site, funnel_id).delete()
        return Response(status=204)


class SiteFunnelResults(SiteView):
    """The funnel over [start, end) (default the last 30 days, at most 92): per step the
    count, conversion from the first and the previous step, median and p90 seconds from
    the previous step; the conversion trend per day; `breakdown` by one of the dimensions
    that split funnels (tables/dimensions.py). `days.pending`: days still being computed
    by the workers (the numbers leave them out; ask again)."""

    @staticmethod
    def registry_parameters() -> list[OpenApiParameter]:
        return [OpenApiParameter("breakdown", str, enum=split_names())]

    @extend_schema(
        parameters=[START, END],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        funnel = funnel_defs.funnel_of(self.site, funnel_id)
        return Response(funnel_result(self.site, funnel, request.query_params))


class SiteFunnelUnits(SiteView):
    """Drill-down: the users (or sessions) that reached `step` (outcome=reached) or
    dropped off after it (outcome=dropped), newest first, each with the session to open."""

    @extend_schema(
        parameters=[
            START,
            END,
            OpenApiParameter("step", OpenApiTypes.INT),
            OpenApiParameter("outcome", str, enum=["reached", "dropped"]),
            OpenApiParameter("cursor", str),
            OpenApiParameter("limit", OpenApiTypes.INT, description=f"1-{MAX_UNITS_PAGE}"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        funnel = funnel_defs.funnel_of(self.site, funnel_id)
        limit = _int(request, "limit", 50, low=1, high=MAX_UNITS_PAGE)
        return Response(funnel_unit_page(self.site, funnel, request.query_params, limit=limit))
