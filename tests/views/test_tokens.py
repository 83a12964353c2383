"""The API tokens page: a user makes tokens (the key shown once), lists and revokes them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.domain.accounts import tokens
from sessions_app.foundation.models import ApiToken

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

PAGE = "/account/tokens/"


def _csrf(client: Client) -> str:
    html = client.get(PAGE).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)[1]


@pytest.fixture
def browser(analyst) -> Client:
    """A signed-in client that enforces CSRF, as a browser session does."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(analyst)
    return client


def test_the_header_links_the_page_and_it_needs_login(client, analyst, site):
    assert f'href="{PAGE}"' in client.get("/").content.decode()
    client.logout()
    response = client.get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_new_token_is_shown_once_and_works_for_the_users_site(browser, analyst, site):
    response = browser.post(
        PAGE, {"name": "notebook", "expires_days": "30", "csrfmiddlewaretoken": _csrf(browser)}
    )
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    key = re.search(r'<code id="new-token-key">([^<]+)</code>', response.content.decode())[1]
    token = ApiToken.objects.get(user=analyst, name="notebook")
    assert token.expires_at is not None and token.digest == tokens.key_digest(key)
    again = browser.get(PAGE).content.decode()
    assert key not in again and "notebook" in again and token.prefix in again
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get(f"/api/sites/{site.id}/report").status_code == 200


def test_a_bad_form_says_why_and_makes_nothing(browser):
    response = browser.post(
        PAGE, {"name": "", "expires_days": "0", "csrfmiddlewaretoken": _csrf(browser)}
    )
    html = response.content.decode()
    assert "name: required" in html and "expires in days: at least 1" in html
    assert not ApiToken.objects.exists()


def test_revoking_needs_post_and_csrf_and_then_the_token_is_refused(browser, analyst, site):
    made = tokens.token_create(user=analyst, name="to-revoke")
    url = f"/account/tokens/{made.token.pk}/revoke"
    assert browser.get(url).status_code == 405
    assert browser.post(url).status_code == 403  # no CSRF token
    assert browser.post(PAGE, {"name": "x"}).status_code == 403
    response = browser.post(url, {"csrfmiddlewaretoken": _csrf(browser)}, follow=True)
    assert response.status_code == 200 and "Token revoked" in response.content.decode()
    assert f'id="token-{made.token.pk}"' not in response.content.decode()
    api = Client(HTTP_AUTHORIZATION=f"Token {made.key}")
    assert api.get(f"/api/sites/{site.id}/report").status_code == 401


def test_nobody_else_sees_or_revokes_a_users_token(browser, analyst):
    made = tokens.token_create(
        user=User.objects.create_user("bob", password="pw-bob-123"), name="bobs"
    )
    assert "bobs" not in browser.get(PAGE).content.decode()
    url = f"/account/tokens/{made.token.pk}/revoke"
    assert browser.post(url, {"csrfmiddlewaretoken": _csrf(browser)}).status_code == 404
    assert tokens.token_authenticate(made.key) is not None
