"""The segments under /api/: the ones the caller sees (GET) and a new one (POST)."""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import SiteView
from sessions_app.features.segments import defs


class SegmentWrite(serializers.Serializer):
    """A segment as POSTed: its name, its filters ({parameter: value}, as the pages'
    URLs name them) and whether the site's members all see it (admins only)."""

    name = serializers.CharField(max_length=defs.MAX_NAME)
    filters = serializers.DictField(child=serializers.CharField())
    shared = serializers.BooleanField(required=False, default=False)


def segment_json(item: defs.Shown) -> dict[str, Any]:
    segment = item.segment
    return {
        "id": segment.pk,
        "name": segment.name,
        "filters": segment.filters,
        "query": item.query,
        "shared": segment.shared,
        "owner": segment.owner.get_username() if segment.owner else None,
        "problem": item.problem or None,
        "created_at": segment.created_at,
        "updated_at": segment.updated_at,
    }


class SiteSegments(SiteView):
    """The site's segments the caller sees (their own and the shared ones), each with
    `query`: its filters as URL parameters, which any report of the site (`/api/sites/
    <id>/report`, `/sessions`, ...) and page applies as they are; `problem` says why one
    cannot be applied (a goal deleted since). POST {name, filters, shared?} saves one."""

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="api_sites_segments_list")
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        segments = list(defs.visible(self.site, request.user)[: defs.MAX_SEGMENTS])
        return Response({"segments": [segment_json(s) for s in defs.shown(self.site, segments)]})

    @extend_schema(request=SegmentWrite, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, site_id: uuid.UUID) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        filters = body.get("filters")
        saved = defs.segment_save(
            site=self.site,
            user=request.user,
            name=body.get("name"),
            filters=filters if isinstance(filters, dict) else {},
            shared=body.get("shared") is True,
        )
        return Response(segment_json(defs.shown(self.site, [saved])[0]), status=201)
