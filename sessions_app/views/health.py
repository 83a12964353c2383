"""GET /healthz: the state of Cassandra, Redis and the Celery workers."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from sessions_app.system.health import health_report


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Return 200 when every dependency answers, else 503 naming what failed."""
    report = health_report()
    if not report["ok"]:
        failed = [name for name, check in report["checks"].items() if not check["ok"]]
        report["failed"] = failed
        report["reason"] = "; ".join(f"{n}: {report['checks'][n]['detail']}" for n in failed)
    return JsonResponse(report, status=200 if report["ok"] else 503)
