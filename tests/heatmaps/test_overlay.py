"""/api/heatmap's token is narrow: one page of one site, revocable by the site's admins
(rotating its salt), only from an origin the site allows; Access-Control-Allow-Origin
never echoes another origin, errors included."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from sessions_app.domain.ledger import sites
from sessions_app.features.heatmaps import reads
from sessions_app.foundation.models import AdminAction
from tests.support.accounts import member

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
OVERLAY = "/api/heatmap"
SHOP = "https://shop.example"
EVIL = "https://evil.example"


def _token(site, page: str = "/pricing") -> str:
    return reads.token_for(site_id=site.id, salt=site.heatmap_salt, page=page)


def _get(
    client, token: str | None, *, origin: str | None = SHOP, page: str = "/pricing", **headers
):
    if origin:
        headers["HTTP_ORIGIN"] = origin
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client.get(OVERLAY, {"page": page, "vp": ">1024", "days": "7"}, **headers)


def test_a_token_reads_the_page_it_was_made_for_only(client, site) -> None:
    token = _token(site, "/pricing")
    ok = _get(client, token, page="/pricing")
    assert ok.status_code == 200, ok.content
    assert ok.json()["page"] == "/pricing" and ok["Access-Control-Allow-Origin"] == SHOP
    other = _get(client, token, page="/checkout")
    assert other.status_code == 401
    assert other.json()["error"].startswith("token: made for another page")
    assert "clicks" not in other.json()


def test_a_site_admin_revokes_every_token_issued_before(client, site) -> None:
    old = _token(site)
    assert _get(client, old).status_code == 200
    user = member(User.objects.create_user("owner", password="pw-own-123"), site, "admin")
    client.force_login(user)
    page = client.get(f"/sites/{site.id}/site").content.decode()
    assert f'action="/sites/{site.id}/site/heatmap-links/revoke"' in page
    confirm = client.get(f"/sites/{site.id}/site/heatmap-links/revoke")  # asks, changes nothing
    assert confirm.status_code == 200 and "Revoke all heatmap links" in confirm.content.decode()
    assert _get(client, old).status_code == 200
    response = client.post(f"/sites/{site.id}/site/heatmap-links/revoke")
    assert response.status_code == 302
    assert "Revoked every heatmap link" in client.get(f"/sites/{site.id}/site").content.decode()
    site.refresh_from_db()
    refused = _get(client, old)
    assert refused.status_code == 401 and refused.json()["error"].startswith("token:")
    assert refused["Access-Control-Allow-Origin"] == SHOP  # the overlay may read why
    assert _get(client, _token(site)).status_code == 200  # a new link works
    [entry] = AdminAction.objects.filter(action="site.rotate_heatmap_salt")
    assert entry.actor == user and str(site.id) in entry.target


def test_an_analyst_cannot_revoke_and_a_get_changes_nothing(client, site) -> None:
    salt = site.heatmap_salt
    client.force_login(member(User.objects.create_user("ana", password="pw-ana-123"), site))
    assert client.post(f"/sites/{site.id}/site/heatmap-links/revoke").status_code == 403
    assert client.get(f"/sites/{site.id}/site/heatmap-links/revoke").status_code == 403
    site.refresh_from_db()
    assert site.heatmap_salt == salt


def test_each_site_has_its_own_salt(site) -> None:
    other = sites.site_create(name="Other", origins=[SHOP])
    assert site.heatmap_salt and other.heatmap_salt and site.heatmap_salt != other.heatmap_salt


def test_a_request_without_origin_is_refused(client, site) -> None:
    response = _get(client, _token(site), origin=None)
    assert response.status_code == 403
    assert response.json()["error"].startswith("origin: required")
    assert "Access-Control-Allow-Origin" not in response


def test_a_same_origin_request_needs_this_servers_origin_allowed(client, site) -> None:
    """A same-origin GET carries no Origin; the browser's Sec-Fetch-Site stands for it."""
    here = sites.site_create(name="Here", origins=["http://testserver"])
    ok = _get(client, _token(here), origin=None, HTTP_SEC_FETCH_SITE="same-origin")
    assert ok.status_code == 200, ok.content
    assert "Access-Control-Allow-Origin" not in ok  # nothing to allow: no Origin was sent
    elsewhere = _get(client, _token(site), origin=None, HTTP_SEC_FETCH_SITE="same-origin")
    assert elsewhere.status_code == 403 and elsewhere.json()["error"].startswith("origin:")
    cross = _get(client, _token(here), origin=None, HTTP_SEC_FETCH_SITE="cross-site")
    assert cross.status_code == 403 and cross.json()["error"].startswith("origin: required")


def test_a_disallowed_origin_is_never_echoed(client, site) -> None:
    other = sites.site_create(name="Other", origins=["https://other.example"])
    token = _token(site)
    tampered = re.sub(r".$", lambda m: "A" if m.group(0) != "A" else "B", token)
    cases = {
        "valid token": (token, EVIL),
        "no token": (None, EVIL),
        "tampered token": (tampered, EVIL),
        "not a token": ("garbage", EVIL),
        "another site's origin": (token, "https://other.example"),
        "another site's token": (_token(other), SHOP),
    }
    for name, (sent, origin) in cases.items():
        response = _get(client, sent, origin=origin)
        assert response.status_code in (401, 403), name
        assert "Access-Control-Allow-Origin" not in response, name
        assert "clicks" not in response.json(), name
    preflight = client.options(OVERLAY, HTTP_ORIGIN=EVIL)
    assert preflight.status_code == 403 and "Access-Control-Allow-Origin" not in preflight
    allowed = client.options(OVERLAY, HTTP_ORIGIN=SHOP)
    assert allowed.status_code == 204 and allowed["Access-Control-Allow-Origin"] == SHOP
