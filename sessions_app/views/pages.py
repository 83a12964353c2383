"""Analyst pages (server-rendered)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.domain.permissions import signed_in_required, visible_sites


@signed_in_required
def home(request: HttpRequest) -> HttpResponse:
    """List the sites the user may browse (superusers: every site)."""
    return render(request, "sessions_app/home.html", {"sites": visible_sites(request.user)})


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


# What the one duration filter writes, shown on the styleguide (seconds).
STYLEGUIDE_DURATIONS = (4.2, 42, 471, 3720, 183600)
