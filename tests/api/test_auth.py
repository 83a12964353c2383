"""`Authorization: Token KEY`: hashed tokens, 401 with WWW-Authenticate for any bad key."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from sessions_app.domain.accounts import tokens
from sessions_app.foundation.models import ApiToken

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _get(site, key: str):
    return Client(HTTP_AUTHORIZATION=f"Token {key}").get(f"/api/sites/{site.id}/report")


def _refused(response) -> bool:
    return (
        response.status_code == 401
        and response["WWW-Authenticate"] == "Token"
        and response.json()["field"] == "auth"
    )


def test_a_token_reads_its_users_site(site, token):
    assert _get(site, token).status_code == 200
    assert ApiToken.objects.get(user__username="api-user").last_used_at is not None


def test_unknown_expired_and_revoked_keys_are_401(site, token):
    user = User.objects.get(username="api-user")
    assert _refused(_get(site, "cst_not-a-key"))
    assert _refused(_get(site, token + "x"))
    expired = tokens.token_create(
        user=user, name="expired", expires_days=1, now=timezone.now() - timedelta(days=2)
    )
    assert _refused(_get(site, expired.key))
    [made] = ApiToken.objects.filter(user=user, name="manage.py")
    assert tokens.token_revoke(user=user, token_id=made.pk)
    assert _refused(_get(site, token))


def test_a_token_of_an_inactive_user_is_401(site, token):
    User.objects.filter(username="api-user").update(is_active=False)
    assert _refused(_get(site, token))


def test_a_malformed_header_is_401(site):
    client = Client(HTTP_AUTHORIZATION="Token two parts")
    assert client.get(f"/api/sites/{site.id}/report").status_code == 401
