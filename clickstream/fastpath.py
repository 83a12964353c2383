"""A lean WSGI path for the collector's POSTs: /collect and the Segment-compatible /v1/*.

They read no cookie, session or user, and answer JSON to other origins, so Django's URL
resolver and middleware stack (sessions, authentication, CSRF, messages, WhiteNoise,
clickjacking) only cost them time: about 0.3 ms of a request's few ms of CPU. This
wrapper hands those requests straight to their views, with the request signals Django
sends (database connections are recycled as usual) and the headers the security
middleware would add; anything else, and every other method (CORS preflights included),
goes through Django unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.http import HttpResponse, JsonResponse

log = logging.getLogger("sessions_app.features.collector.views")


def _routes() -> dict[str, tuple[Callable[..., HttpResponse], dict[str, str]]]:
    """The collector's POST routes as sessions_app/urls.py declares them (mounted at /)."""
    # Imported on first use: wsgi.py builds this wrapper before django.setup() has loaded
    # the apps that the URL modules' views import.
    from sessions_app import urls
    from sessions_app.features.collector import views as collector

    views = (collector.collect, collector.segment)
    return {
        f"/{pattern.pattern}": (pattern.callback, dict(pattern.default_args))
        for pattern in urls.urlpatterns
        if getattr(pattern, "callback", None) in views
    }


class CollectorFastPath:
    """Serve POST /collect and /v1/* without Django's middleware; the rest with `app`."""

    def __init__(self, app: WSGIHandler) -> None:
        self.app = app
        self.routes = _routes()
        # What SecurityMiddleware and XFrameOptionsMiddleware give every other answer.
        self.headers = [
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", settings.SECURE_REFERRER_POLICY),
            ("Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY),
            ("X-Frame-Options", settings.X_FRAME_OPTIONS),
        ]

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        route = (
            self.routes.get(environ.get("PATH_INFO", ""))
            if environ.get("REQUEST_METHOD") == "POST"
            else None
        )
        if route is None:
            return self.app(environ, start_response)
        signals.request_started.send(sender=WSGIHandler, environ=environ)
        request = WSGIRequest(environ)
        view, kwargs = route
        try:
            response = view(request, **kwargs)
        except Exception:  # what Django's handler would do: log it, answer 500
            log.exception("collector request failed")
            response = JsonResponse(
                {"error": "server: internal error", "field": "server"}, status=500
            )
        for name, value in self.headers:
            response.headers.setdefault(name, value)
        response._handler_class = WSGIHandler  # type: ignore[attr-defined]  # close() signals
        response._resource_closers.append(request.close)  # type: ignore[attr-defined]
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return response
