"""Analyst pages (server-rendered)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.models import Site
from sessions_app.permissions import analyst_required


@analyst_required
def home(request: HttpRequest) -> HttpResponse:
    """List the sites the analyst can browse."""
    return render(request, "sessions_app/home.html", {"sites": Site.objects.all()})
