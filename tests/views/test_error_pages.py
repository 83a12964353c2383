"""The app's own error pages (templates/404.html, 403.html, 403_csrf.html, 400.html,
500.html): the base layout, what happened and a way back, never technical details."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import path

from clickstream.urls import urlpatterns as app_urlpatterns
from tests.support.accounts import member

pytestmark = pytest.mark.django_db
INTERNAL = "internal-detail-7f3a /srv/clickstream/secret.py"
TECHNICAL = (
    "Traceback",
    "URLconf",
    "DEBUG = ",
    "Request Method",
    "Django Version",
    "Exception Value",
    "Reason given for failure",
    "CSRF verification failed",
    INTERNAL,
)


def _broken(request):
    raise RuntimeError(INTERNAL)


# The app's routes plus one that fails, for the 500 page (pytest.mark.urls below).
urlpatterns = [path("test-broken", _broken), *app_urlpatterns]


def _own_page(response, status: int, heading: str) -> str:
    assert response.status_code == status
    html = response.content.decode()
    assert f"<h1>{heading}</h1>" in html, html[:2000]
    assert 'class="brand"' in html and "sessions_app/app.css" in html  # the base layout
    assert '<a href="/">Back to your sites</a>' in html
    assert [t for t in TECHNICAL if t in html] == []
    return html


def test_an_unknown_address_is_the_apps_404(client) -> None:
    _own_page(client.get("/no-such-page"), 404, "Page not found")


def test_a_site_the_user_may_not_see_is_the_apps_404_with_their_menu(client, site) -> None:
    client.force_login(User.objects.create_user("outsider", password="pw-out-123"))
    html = _own_page(client.get(f"/sites/{uuid.uuid4()}/"), 404, "Page not found")
    assert "outsider" in html  # signed in: the base layout's menu is there


def test_a_role_that_does_not_allow_the_page_is_the_apps_403(client, site) -> None:
    analyst = member(User.objects.create_user("ana", password="pw-ana-123"), site)
    client.force_login(analyst)
    _own_page(client.get(f"/sites/{site.id}/site"), 403, "Not allowed")


def test_a_form_without_its_csrf_token_is_the_apps_403(db) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "x", "password": "y"})
    _own_page(response, 403, "Form expired")


def test_a_host_this_server_does_not_answer_is_the_apps_400(client) -> None:
    _own_page(client.get("/", HTTP_HOST="evil.example"), 400, "Bad request")


@pytest.mark.urls(__name__)
def test_a_failing_view_is_the_apps_500_without_the_exception(db) -> None:
    client = Client(raise_request_exception=False)
    _own_page(client.get("/test-broken"), 500, "Something went wrong")
