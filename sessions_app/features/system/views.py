"""The installation's own pages: the home page, the style guide, the demo shop, and health:
GET /healthz (liveness, anyone) and GET /healthz/deep (every dependency, installation
admins only, answered from a report at most a second old)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
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

from sessions_app.domain.aggregates import totals
from sessions_app.domain.permissions import is_admin, signed_in_required, visible_sites
from sessions_app.domain.system.health import health_report_cached, liveness_report
from sessions_app.features.analysis.kpi_report import period_report, site_period
from sessions_app.features.web.periods import DEFAULT_PRESET, PRESETS
from sessions_app.foundation.core.bounds import RangeError
from sessions_app.foundation.models import Site

SITES_COUNTED = 30  # sites whose visitors and trend the list counts (the first, by name)


@signed_in_required
def home(request: HttpRequest) -> HttpResponse:
    """List the sites the user may browse (superusers: every site), each with its unique
    visitors over the period, their change and a trend (the dashboard's numbers)."""
    sites = list(visible_sites(request.user).order_by("name"))
    now, error = datetime.now(UTC), ""
    rows = []
    for index, site in enumerate(sites):
        row: dict[str, Any] = {"site": site}
        if index < SITES_COUNTED:
            try:
                row.update(site_numbers(site, request.GET, now))
            except RangeError as exc:
                error = f"{exc}; showing {PRESETS[DEFAULT_PRESET].lower()} instead"
                row.update(site_numbers(site, {}, now))
        rows.append(row)
    context = {"sites": rows, "error": error, "counted": SITES_COUNTED}
    return render(request, "sessions_app/home.html", context)


TREND_HEIGHT = 24


def site_numbers(site: Site, params: Any, now: datetime) -> dict[str, Any]:
    """A site's unique visitors over the period asked for, the change against the previous
    one and the visitors of each day (each hour of a day-long period) as a trend's bars."""
    period, _ = site_period(params, site=site, now=now)
    grain = "hour" if period.end - period.start <= timedelta(days=1) else "day"
    result = period_report(site=site, period=period, grain=grain, breakdown=False, conversion=False)
    series = [
        None if r.state in ("future", "pending") else totals.kpis_of(r.aggregates).visitors
        for r in result.current["buckets"]
    ]
    top = max((v for v in series if v), default=0) or 1
    step = 6 if len(series) <= 31 else 3  # a day's bar 5 px wide, an hour's 2
    bars = []
    for i, value in enumerate(series):
        height = round(TREND_HEIGHT * (value or 0) / top)
        bars.append({"x": step * i, "y": TREND_HEIGHT - height, "h": height, "value": value})
    card = next(c for c in result.cards() if c["key"] == "visitors")
    return {
        "visitors": card,
        "bars": bars,
        "bar_width": step - 1,
        "width": max(step, step * len(bars)),
        "period": period,
        "unit": grain,
    }


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
