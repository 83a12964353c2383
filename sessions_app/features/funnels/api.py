"""Funnels under /api/: saved definitions (create, read, edit, delete), results and the
units behind every step (features/funnels/results.py)."""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import ADMIN, SiteView
from sessions_app.features.funnels import answers, defs
from sessions_app.features.funnels.spec import DefinitionSerializer
from sessions_app.features.funnels.table import split_names
from sessions_app.features.web.params import END, START, api_int
from sessions_app.features.web.periods import API_PARAMETERS
from sessions_app.foundation.models import Funnel

MAX_UNITS_PAGE = 200


class FunnelWrite(serializers.Serializer):
    """A funnel as POSTed or PUT: its name and definition (features/funnels/spec.py)."""

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
        return Response({"funnels": [defs.funnel_json(f) for f in found]})

    @extend_schema(request=FunnelWrite, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, site_id: uuid.UUID) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        funnel = defs.funnel_create(
            site=self.site,
            name=body.get("name"),
            definition=body.get("definition"),
            user=request.user,
        )
        return Response(defs.funnel_json(funnel), status=201)


class SiteFunnel(SiteView):
    """One funnel: GET, PUT {name?, definition?} (a changed definition is a new version),
    DELETE; PUT and DELETE are for the site's admins."""

    edit_role = ADMIN

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        return Response(defs.funnel_json(defs.funnel_of(self.site, funnel_id)))

    @extend_schema(request=FunnelWrite, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        funnel = defs.funnel_of(self.site, funnel_id)
        body = request.data if isinstance(request.data, dict) else {}
        defs.funnel_update(funnel=funnel, name=body.get("name"), definition=body.get("definition"))
        return Response(defs.funnel_json(funnel))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        defs.funnel_of(self.site, funnel_id).delete()
        return Response(status=204)


class SiteFunnelResults(SiteView):
    """The funnel over the period (period/from/to in the site's time zone, default the last
    7 days, or the old start/end; at most its last 92 days, `note` says when it was cut;
    `period` asks for it again, `time_zone` is the site's): per step the
    count, conversion from the first and the previous step, median and p90 seconds from
    the previous step; the conversion trend per day; `breakdown` by one of the dimensions
    that split funnels (foundation/dimensions.py). `days.pending`: days still being computed
    by the workers (the numbers leave them out; ask again)."""

    @staticmethod
    def registry_parameters() -> list[OpenApiParameter]:
        return [OpenApiParameter("breakdown", str, enum=split_names())]

    @extend_schema(
        parameters=[*API_PARAMETERS, START, END],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, site_id: uuid.UUID, funnel_id: int) -> Response:
        funnel = defs.funnel_of(self.site, funnel_id)
        return Response(answers.funnel_result(self.site, funnel, request.query_params))


class SiteFunnelUnits(SiteView):
    """Drill-down: the users (or sessions) that reached `step` (outcome=reached) or
    dropped off after it (outcome=dropped), newest first, each with the session to open."""

    @extend_schema(
        parameters=[
            *API_PARAMETERS,
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
        funnel = defs.funnel_of(self.site, funnel_id)
        limit = api_int(request.query_params, "limit", 50, low=1, high=MAX_UNITS_PAGE)
        return Response(
            answers.funnel_unit_page(self.site, funnel, request.query_params, limit=limit)
        )
