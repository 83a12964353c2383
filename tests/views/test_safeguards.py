"""Destructive actions ask first: an erasure needs its key typed twice
and warns about a key without data; revoking asks; an erased profile says so; retention's
internals wait under "Advanced"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.models import ErasureRequest, Suppression
from tests.support.accounts import member
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.fixture
def root(client):
    user = User.objects.create_superuser("root", password="pw-root-123")
    client.force_login(user)
    return user


def _erase(client, site, key: str, again: str, **extra: str):
    form = {"site": str(site.pk), "kind": "user_id", "key": key, "key_again": again, **extra}
    return client.post("/erasure/", form)


def test_an_erasure_needs_the_key_typed_twice(client, site, root):
    response = _erase(client, site, "ada", "adb")
    assert response.status_code == 400
    assert "key again: does not match the key" in response.content.decode()
    response = client.post("/erasure/", {"site": str(site.pk), "kind": "user_id", "key": "ada"})
    assert response.status_code == 400
    assert "key again: type the key a second time" in response.content.decode()
    assert not ErasureRequest.objects.exists() and not Suppression.objects.exists()


def test_a_key_without_data_is_warned_about_and_erased_only_when_asked_again(client, site, root):
    response = _erase(client, site, "nobody", "nobody")
    body = response.content.decode()
    assert response.status_code == 200 and 'id="no-data"' in body
    assert "No data found for <code>nobody</code> on Shop" in body
    assert 'name="anyway" value="on"' in body and "Erase anyway" in body
    assert not ErasureRequest.objects.exists()
    response = _erase(client, site, "nobody", "nobody", anyway="on")
    assert response.status_code == 302
    assert ErasureRequest.objects.get().key == "nobody"


def test_a_key_with_data_is_erased_without_the_warning(client, site, root):
    at = timezone.now() - timedelta(hours=1)
    events_record(
        source=Source(site=site, received_at=at), raw_events=[event(at, anon="a1", user_id="ada")]
    )
    response = _erase(client, site, "ada", "ada")
    assert response.status_code == 302
    assert ErasureRequest.objects.get().key == "ada"


def test_a_receipt_that_found_nothing_says_so_instead_of_done(client, site, root):
    found_nothing = ErasureRequest.objects.create(
        site=site,
        key="k",
        kind="user_id",
        requested_by=root,
        requested_by_name="root",
        state=ErasureRequest.DONE,
        finished_at=timezone.now(),
        counts={},
    )
    body = client.get(f"/erasure/{found_nothing.pk}/").content.decode()
    assert 'id="nothing-found"' in body and "Nothing was found for this key" in body
    found_nothing.counts = {"user_sessions": 2}
    found_nothing.save()
    assert 'id="nothing-found"' not in client.get(f"/erasure/{found_nothing.pk}/").content.decode()


def test_an_erased_profile_says_when_in_the_sites_zone(client, site, root):
    site.time_zone = "Europe/Berlin"
    site.save()
    erasure = ErasureRequest.objects.create(
        site=site,
        key="ada",
        kind="user_id",
        requested_by=root,
        requested_by_name="root",
        state=ErasureRequest.DONE,
        finished_at=datetime(2026, 11, 20, 9, 30, tzinfo=UTC),
    )
    Suppression.objects.create(site=site, key="ada", erasure=erasure)
    body = client.get(f"/sites/{site.id}/users/ada/").content.decode()
    assert 'id="erased"' in body and "Erased on 2026-11-20 10:30" in body  # 09:30 UTC in Berlin
    assert 'id="erased"' not in client.get(f"/sites/{site.id}/users/bob/").content.decode()
    erasure.state, erasure.finished_at = ErasureRequest.RUNNING, None
    erasure.save()
    assert "Erasure requested on" in client.get(f"/sites/{site.id}/users/ada/").content.decode()


def test_destructive_forms_carry_their_confirmation(client, site, root):
    from sessions_app.domain.accounts import tokens

    tokens.token_create(user=root, name="ci", expires_days=None)
    body = client.get("/account/tokens/").content.decode()
    assert 'class="revoke" data-confirm="Programs that send the token “ci” get 401' in body
    assert "data-confirm=" in client.get(f"/sites/{site.id}/site").content.decode()
    erasure = client.get("/erasure/").content.decode()
    assert 'id="erasure-form" data-confirm=' in erasure and 'name="key_again"' in erasure


def test_retention_keeps_table_names_and_ttls_under_advanced(client, root):
    body = client.get("/retention/").content.decode()
    advanced = body.index('<details class="advanced"')
    for internal in ("site_events_by_bucket", "default_time_to_live", "USING TTL"):
        assert body.index(internal) > advanced, internal
    assert body.index("Raw events") < advanced  # the policies themselves come first


def test_an_analyst_sees_no_settings_of_the_installation(client, analyst, site):
    body = client.get(f"/sites/{site.id}/").content.decode()
    assert 'href="/retention/"' not in body and 'href="/erasure/"' not in body
    member(analyst, site, "analyst")
    assert client.get("/erasure/").status_code == 403
