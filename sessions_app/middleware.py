"""Response headers: Content-Security-Policy on HTML pages, Server-Timing on the API."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            response.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class ServerTimingMiddleware:
    """Add `Server-Timing: app;dur=<ms>` to API responses (time spent in Django)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        if request.path.startswith("/api/"):
            elapsed = (time.perf_counter() - started) * 1000
            response["Server-Timing"] = f"app;dur={elapsed:.2f}"
        return response


SITE_KEY = "nav_site"  # the session key of the site the nav shows on pages without one


class SiteContextMiddleware:
    """Remember the last site a signed-in person opened, so the pages that belong to no
    site (settings, tokens, the admin) keep that site's nav (templatetags `nav_site`
    checks access again when it reads it)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        _view_func: Callable[..., HttpResponse],
        _view_args: tuple[object, ...],
        view_kwargs: dict[str, object],
    ) -> None:
        site_id = view_kwargs.get("site_id")
        if site_id is None or not request.user.is_authenticated:
            return
        if request.session.get(SITE_KEY) != str(site_id):
            request.session[SITE_KEY] = str(site_id)
