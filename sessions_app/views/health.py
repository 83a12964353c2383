"""GET /healthz (liveness, anyone) and GET /healthz/deep (every dependency, installation
admins only, answered from a report at most a second old)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.domain.permissions import is_admin
from sessions_app.domain.system.health import health_report_cached, liveness_report


class InstallationAdmin(BasePermission):
    """The installation's admin role (a superuser or the `admin` group); anonymous callers
    get 404, as if the route did not exist, others 403."""

    message = "the installation's admin role is required"

    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            raise NotFound()
        return is_admin(request.user)


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """For load balancers: 200 when this process reaches Cassandra and Redis, else 503
    naming what failed. No versions, no worker names, no broker round trip."""
    report = liveness_report()
    return JsonResponse(report, status=200 if report["ok"] else 503)


@extend_schema(exclude=True)
class DeepHealthView(APIView):
    """Cassandra, Redis, the Celery workers' ping and the applier queue, with details.

    Authentication is DRF's configured one (API token or login session), so whatever
    token model the API uses works here too; a bad token gets 401, no credentials 404,
    a user without the installation's admin role 403.
    """

    permission_classes = [InstallationAdmin]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        report = health_report_cached()
        return Response(report, status=200 if report["ok"] else 503)


healthz_deep = never_cache(DeepHealthView.as_view())
