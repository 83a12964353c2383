"""Browsers ask every origin for /favicon.ico: it leads to the app's icon, not a 404."""

from __future__ import annotations

from pathlib import Path

from django.contrib.staticfiles import finders


def test_favicon_ico_redirects_to_the_svg_icon(client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/sessions_app/favicon.svg"
    icon = finders.find("sessions_app/favicon.svg")
    assert icon and Path(icon).read_text().startswith("<svg")


def test_pages_name_their_icon(client) -> None:
    page = client.get("/accounts/login/").content.decode()
    assert '<link rel="icon" href="/static/sessions_app/favicon.svg"' in page
