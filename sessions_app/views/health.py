"""GET /healthz (liveness, anyone) and GET /healthz/deep (every dependency, authenticated)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.system.health import health_report, liveness_report


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
    token model the API uses works here too; anonymous callers get 401.
    """

    permission_classes = [IsAuthenticated]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        report = health_report()
        return Response(report, status=200 if report["ok"] else 503)


healthz_deep = never_cache(DeepHealthView.as_view())
