"""GET /demo/: a small fake shop with the tracker installed, to click around in."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.foundation.models import Site

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
