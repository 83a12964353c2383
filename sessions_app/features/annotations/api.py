"""The annotations under /api/: a site's notes (GET, over a period or the latest), a new
one (POST), one note (GET) and its deletion (DELETE, by its author or a site admin)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.exceptions import PermissionDenied as DRFPermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import SiteView
from sessions_app.features.annotations import notes
from sessions_app.features.web import periods
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Annotation


class AnnotationWrite(serializers.Serializer):
    """A note as POSTed: its day (YYYY-MM-DD, the site's), the range's last day if any,
    its words, and whether a share link's viewers see it."""

    day = serializers.DateField()
    end_day = serializers.DateField(required=False, allow_null=True)
    note = serializers.CharField(max_length=notes.MAX_NOTE)
    public = serializers.BooleanField(required=False, default=False)


class NotChangeable(DRFPermissionDenied):
    field = "auth"


def _body(request: Request) -> dict[str, Any]:
    """The JSON object POSTed; RangeError naming `body` for anything else."""
    if not isinstance(request.data, dict):
        raise RangeError("body", "a JSON object: {day, end_day?, note, public?}")
    return request.data


class SiteAnnotations(SiteView):
    """The site's notes on its time charts. GET: with period parameters (period, from, to),
    the notes on a day of that period, earliest first; without, the latest days first. At
    most 200 either way (`truncated` says when more matched). POST {day, end_day?, note,
    public?} adds one; a bad field is a 400 naming it."""

    @extend_schema(
        parameters=[p for p in periods.API_PARAMETERS if p.name != "compare"],
        responses=OpenApiTypes.OBJECT,
        operation_id="api_sites_annotations_list",
    )
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        params = {k: str(v) for k, v in request.query_params.items()}
        if any(params.get(name) for name in ("period", "from", "to")):
            zone = periods.site_zone(self.site.time_zone)
            period = periods.period_param(params, zone=zone, now=datetime.now(UTC))
            found = notes.overlapping(self.site, *notes.period_days(self.site, period))
        else:
            found = notes.of_site(self.site)
        listed = list(found[: notes.MAX_ON_CHART + 1])
        return Response(
            {
                "annotations": [
                    notes.annotation_json(a, site=self.site) for a in listed[: notes.MAX_ON_CHART]
                ],
                "truncated": len(listed) > notes.MAX_ON_CHART,
            }
        )

    @extend_schema(request=AnnotationWrite, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, site_id: uuid.UUID) -> Response:
        body = _body(request)
        public = body.get("public", False)
        if not isinstance(public, bool):
            raise RangeError("public", "true or false")
        saved = notes.annotation_save(
            site=self.site,
            user=request.user,
            day=body.get("day"),
            end_day=body.get("end_day"),
            note=body.get("note"),
            public=public,
        )
        return Response(notes.annotation_json(saved, site=self.site), status=201)


class SiteAnnotation(SiteView):
    """One note of the site (GET); DELETE removes it (its author or a site admin: else 403)."""

    def _found(self, annotation_id: int) -> Annotation:
        found = notes.of_site(self.site).filter(pk=annotation_id).first()
        if found is None:
            raise NotFound("no such note")
        return found

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, annotation_id: int) -> Response:
        return Response(notes.annotation_json(self._found(annotation_id), site=self.site))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, site_id: uuid.UUID, annotation_id: int) -> Response:
        annotation = self._found(annotation_id)
        if not notes.may_change(request.user, self.site, annotation):
            raise NotChangeable("only its author or the site's admins delete a note")
        annotation.delete()
        return Response(status=204)
