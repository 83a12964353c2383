"""Analyst pages (server-rendered)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.permissions import signed_in_required, visible_sites


@signed_in_required
def home(request: HttpRequest) -> HttpResponse:
    """List the sites the user may browse (superusers: every site)."""
    return render(request, "sessions_app/home.html", {"sites": visible_sites(request.user)})
