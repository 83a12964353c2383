"""API tokens' scopes (issue 61.4): a token names its sites or reaches all its user's, may
write or only read, and has API_TOKEN_RATE requests an hour, answered with X-RateLimit-*
headers and, past it, 429 with Retry-After; tokens made before scopes keep reaching
every site, reading and writing; the schema says which scope each operation needs."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions_app.domain.accounts import tokens
from sessions_app.domain.ledger import sites
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import ApiToken
from tests.support.accounts import member

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

GOAL = {"name": "Checkout", "definition": {"kind": "pageview", "path": "/checkout"}}


@pytest.fixture
def two_sites(site):
    other = sites.site_create(name="Second shop", origins=["https://second.example"])
    user = User.objects.create_user("scoped", password="pw-scoped-123")
    member(user, site, "admin")
    member(user, other, "admin")
    return user, site, other


def _client(key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def test_a_token_reaches_the_sites_it_names_alone(two_sites):
    user, site, other = two_sites
    key = tokens.token_create(user=user, name="one site", sites=[site]).key
    assert _client(key).get(f"/api/sites/{site.id}/report").status_code == 200
    refused = _client(key).get(f"/api/sites/{other.id}/report")
    missing = _client(key).get(f"/api/sites/{uuid.uuid4()}/report")
    assert refused.status_code == 404 and refused.json() == missing.json()  # as if none


def test_a_read_only_token_reads_and_may_not_write(two_sites):
    user, site, _ = two_sites
    key = tokens.token_create(user=user, name="reader", read_only=True).key
    assert _client(key).get(f"/api/sites/{site.id}/goals").status_code == 200
    refused = _client(key).post(
        f"/api/sites/{site.id}/goals", GOAL, content_type="application/json"
    )
    assert refused.status_code == 403 and refused.json()["field"] == "token"
    assert "only read" in refused.json()["error"]
    writer = tokens.token_create(user=user, name="writer").key
    goals = f"/api/sites/{site.id}/goals"
    assert _client(writer).post(goals, GOAL, content_type="application/json").status_code == 201


def test_a_token_made_before_scopes_reaches_every_site_and_writes(two_sites):
    user, site, other = two_sites
    key = tokens.token_create(user=user, name="old").key
    ApiToken.objects.filter(user=user).update(read_only=False)  # as the migration left them
    for target in (site, other):
        assert _client(key).get(f"/api/sites/{target.id}/report").status_code == 200
    made = _client(key).post(f"/api/sites/{other.id}/goals", GOAL, content_type="application/json")
    assert made.status_code == 201


def test_each_answer_says_the_hours_budget_and_past_it_429(two_sites, settings):
    user, site, _ = two_sites
    settings.API_TOKEN_RATE = 3
    new = tokens.token_create(user=user, name="metered")
    client, url = _client(new.key), f"/api/sites/{site.id}/report"
    left = []
    for _ in range(3):
        answer = client.get(url)
        assert answer.status_code == 200 and answer["X-RateLimit-Limit"] == "3"
        left.append(int(answer["X-RateLimit-Remaining"]))
    assert left == [2, 1, 0]
    over = client.get(url)
    assert over.status_code == 429 and over.json()["field"] == "token"
    assert 1 <= int(over["Retry-After"]) <= 3600
    assert over["X-RateLimit-Remaining"] == "0"
    assert int(over["X-RateLimit-Reset"]) % 3600 == 0
    # Another token of the same user has its own hour.
    fresh = tokens.token_create(user=user, name="another").key
    assert _client(fresh).get(url).status_code == 200
    redis_client().delete(*redis_client().keys(f"api-rate:{new.token.digest[:24]}:*"))


def test_the_token_page_makes_a_scoped_token_and_lists_its_scope(client, two_sites):
    user, site, _ = two_sites
    client.force_login(user)
    page = client.post(
        "/account/tokens/", {"name": "CI export", "read_only": "on", "sites": [str(site.id)]}
    )
    assert page.status_code == 200
    made = ApiToken.objects.get(user=user, name="CI export")
    assert made.read_only and list(made.sites.all()) == [site]
    row = page.content.decode().split(f'id="token-{made.pk}"', 1)[1].split("</tr>", 1)[0]
    assert f"{site.name} · read" in row
    stranger = sites.site_create(name="Not theirs", origins=["https://n.example"])
    bad = client.post("/account/tokens/", {"name": "x", "sites": [str(stranger.id)]})
    assert "is none of your sites" in bad.content.decode()
    assert not ApiToken.objects.filter(user=user, name="x").exists()


def test_the_schema_says_each_operations_scope(admin_client):
    schema = admin_client.get("/api/schema", HTTP_ACCEPT="application/json").json()
    scopes = {
        (path, method): operation["x-token-scope"]
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    }
    assert scopes[("/api/sites/{site_id}/goals", "get")] == "read"
    assert scopes[("/api/sites/{site_id}/goals", "post")] == "write"
    assert set(scopes.values()) == {"read", "write"}


def test_with_redis_unreachable_a_token_is_answered_unmetered(two_sites, settings):
    """The hour's count lives in Redis; a Redis that refuses connections (nothing listens
    on port 1) leaves the API answering, without the X-RateLimit-* headers."""
    user, site, _ = two_sites
    key = tokens.token_create(user=user, name="no redis").key
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    answer = _client(key).get(f"/api/sites/{site.id}/goals")
    assert answer.status_code == 200 and "X-RateLimit-Limit" not in answer
