"""Analyst pages (server-rendered)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from sessions_app.models import Site


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """List the sites the analyst can browse."""
    return render(request, "sessions_app/home.html", {"sites": Site.objects.all()})
