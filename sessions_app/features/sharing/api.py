"""Share links under /api/: a site's links (GET), a new one (POST), revoking one (DELETE).
Site admins only, as on the page."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.domain.permissions import ADMIN, SiteView
from sessions_app.features.sharing import defs
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import ShareLink


class ShareLinkWrite(serializers.Serializer):
    """A link as POSTed: a name, the reports besides the dashboard, the segment it is
    locked to, a password, the origins that may embed it, days until it expires."""

    name = serializers.CharField(max_length=defs.MAX_NAME)
    reports = serializers.ListField(child=serializers.CharField(), required=False)
    segment = serializers.IntegerField(required=False, allow_null=True)
    password = serializers.CharField(required=False, allow_blank=True)
    embed_origins = serializers.ListField(child=serializers.CharField(), required=False)
    expires_days = serializers.IntegerField(required=False, allow_null=True)


def link_json(item: defs.Listed, base_url: str) -> dict[str, Any]:
    link = item.link
    return {
        "id": link.pk,
        "name": link.name,
        "url": f"{base_url}{link.slug}/",
        "state": item.state,
        "reports": link.reports,
        "locked_filters": link.filters,
        "segment": link.segment_name or None,
        "password": bool(link.password),
        "embed_origins": link.embed_origins,
        "created_by": link.created_by.get_username() if link.created_by else None,
        "created_at": link.created_at,
        "expires_at": link.expires_at,
        "revoked_at": link.revoked_at,
        "last_used_at": link.last_used_at,
    }


def _listed(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 20 or not all(isinstance(v, str) for v in value):
        raise RangeError(field, "a list of at most 20 texts")
    return value


def _text(value: Any, field: str) -> str:
    if value is not None and not isinstance(value, str):
        raise RangeError(field, "a text")
    return value or ""


def _days(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RangeError("expires_days", "a number of days, or null")
    return str(value)


class SiteShareLinks(SiteView):
    """The site's share links, newest first (revoked and expired ones too, marked by
    `state`); POST makes one and answers it with its `url`."""

    site_role = ADMIN

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="api_sites_share_links_list")
    def get(self, request: Request, site_id: uuid.UUID) -> Response:
        base = request.build_absolute_uri("/share/")
        return Response({"share_links": [link_json(i, base) for i in defs.listed(self.site)]})

    @extend_schema(request=ShareLinkWrite, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, site_id: uuid.UUID) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        segment = body.get("segment")
        if segment is not None and (isinstance(segment, bool) or not isinstance(segment, int)):
            raise RangeError("segment", "a segment's id, or null")
        link = defs.link_create(
            site=self.site,
            user=request.user,
            name=body.get("name"),
            reports=_listed(body.get("reports"), "reports"),
            segment=segment,
            password=_text(body.get("password"), "password"),
            origins=" ".join(_listed(body.get("embed_origins"), "embed_origins")),
            expires_days=_days(body.get("expires_days")),
        )
        base = request.build_absolute_uri("/share/")
        return Response(link_json(defs.listed_one(link), base), status=201)


class SiteShareLink(SiteView):
    """One link (GET); DELETE revokes it (it answers 404 from then on; the row is kept)."""

    site_role = ADMIN

    def _link(self, link_id: int) -> ShareLink:
        link = ShareLink.objects.filter(site=self.site, pk=link_id).first()
        if link is None:
            raise Http404("no such link")
        return link

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, site_id: uuid.UUID, link_id: int) -> Response:
        base = request.build_absolute_uri("/share/")
        return Response(link_json(defs.listed_one(self._link(link_id)), base))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, site_id: uuid.UUID, link_id: int) -> Response:
        defs.link_revoke(self._link(link_id))
        return Response(status=204)
