"""The installation's own pages: the home page, the style guide, the demo shop, and health:
GET /healthz (liveness, anyone) and GET /healthz/deep (every dependency, installation
admins only, answered from a report at most a second old)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.domain.permissions import is_admin, signed_in_required, visible_sites
from sessions_app.domain.system.health import health_report_cached, liveness_report
from sessions_app.foundation.models import Site


@signed_in_required
def home(request: HttpRequest) -> HttpResponse:
    """List the sites the user may browse (superusers: every site)."""
    return render(request, "sessions_app/home.html", {"sites": visible_sites(request.user)})


# What the one duration filter writes, shown on the styleguide (seconds).
STYLEGUIDE_DURATIONS = (4.2, 42, 471, 3720, 183600)


def styleguide(request: HttpRequest) -> HttpResponse:
    """Show every component of the design system (docs/design.md), in development only."""
    if not settings.DEBUG:
        raise Http404("the styleguide is shown in development (DEBUG) only")
    return render(
        request,
        "sessions_app/styleguide.html",
        {
            "durations": STYLEGUIDE_DURATIONS,
            "sample_time": datetime(2026, 11, 27, 14, 5, tzinfo=UTC),
        },
    )


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


PRODUCTS = [
    {
        "slug": "espresso-machine",
        "name": "Espresso machine",
        "price": 399,
        "blurb": "Dual boiler, 58 mm portafilter, steam in ten seconds.",
    },
    {
        "slug": "grinder",
        "name": "Burr grinder",
        "price": 129,
        "blurb": "Conical burrs, 40 settings from espresso to French press.",
    },
    {
        "slug": "kettle",
        "name": "Gooseneck kettle",
        "price": 49,
        "blurb": "A slow, steady pour for filter coffee.",
    },
]


def demo(request: HttpRequest, path: str = "") -> HttpResponse:
    """Render the demo shop for the demo site (in development, DEBUG, the site whose key is
    in ?site=: elsewhere a link could dress the demo up as another tenant's site)."""
    key = request.GET.get("site") if settings.DEBUG else None
    site = (
        Site.objects.filter(key=key, enabled=True).first()
        if key
        else Site.objects.filter(name="Demo Shop").first()
    )
    if site is None:
        raise Http404("no demo site: run `make run` (or manage.py bootstrap_local) first")
    # ?endpoint= lets the end-to-end tests put a real network hop in front of the
    # collector; only loopback http(s) URLs are taken, so a crafted link cannot send
    # a visitor's clicks elsewhere.
    endpoint = request.GET.get("endpoint", "")
    if not _loopback(endpoint):
        endpoint = request.build_absolute_uri("/collect")
    response = render(
        request,
        "sessions_app/demo.html",
        {"site": site, "products": PRODUCTS, "endpoint": endpoint},
    )
    # The analyst-page policy, plus the collector's origin for the tracker's requests.
    parts = urlsplit(endpoint)
    response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY.replace(
        "connect-src 'self'", f"connect-src 'self' {parts.scheme}://{parts.netloc}"
    )
    return response


def _loopback(endpoint: str) -> bool:
    try:
        parts = urlsplit(endpoint)
        parts.port  # noqa: B018 - raises for a port that is not a number
        return parts.scheme in ("http", "https") and parts.hostname in LOOPBACK
    except ValueError:  # an unclosed IPv6 host or a port that is not a number
        return False


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
