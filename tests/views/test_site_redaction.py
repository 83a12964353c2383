"""A site's own list of URL parameters the tracker drops (beside its default secret names):
edited by an admin, validated, audited, and rendered into the snippet as data-redact.
The tracker's side: tests/tracker (helpers and fake page) and tests/e2e/test_tracker.py."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from sessions_app.foundation.models import AdminAction, Site
from tests.support.accounts import member

pytestmark = pytest.mark.django_db


def _operator() -> Client:
    user = User.objects.create_user("operator", password="pw-op-123")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client = Client()
    client.force_login(user)
    return client


def _change(client: Client, site: Site, redact: object) -> object:
    return client.post(
        f"/admin/sessions_app/site/{site.pk}/change/",
        {
            "name": site.name,
            "allowed_origins": json.dumps(site.allowed_origins),
            "redact_params": json.dumps(redact),
            "enabled": "on",
            "event_shards": site.event_shards,
            "time_zone": site.time_zone,
            "replay_sample": site.replay_sample,  # the admin form shows them filled in
            "replay_retention_days": site.replay_retention_days,
        },
    )


def test_an_admin_sets_the_list_and_the_snippet_carries_it(client, analyst, site, settings):
    settings_url = f"/sites/{site.id}/site"
    member(analyst, site, "admin")
    assert "data-redact" not in client.get(settings_url).content.decode()

    response = _change(_operator(), site, ["email", "-code"])
    assert response.status_code == 302, response.content.decode()[:2000]
    site.refresh_from_db()
    assert site.redact_params == ["email", "-code"]
    [entry] = AdminAction.objects.filter(action="site.change")
    assert entry.details["redact_params"] == ["email", "-code"]
    assert "redact_params" in entry.details["changed"]

    page = client.get(settings_url).content.decode()
    assert 'data-redact="email,-code"' in page
    settings.DEBUG = True  # /demo/?site=KEY in development only
    demo = client.get(f"/demo/?site={site.key}").content.decode()
    assert 'data-redact="email,-code"' in demo


@pytest.mark.parametrize(
    "bad",
    [["e mail"], ['x" onload="alert(1)'], "email", [f"p{i}" for i in range(51)], [7], [""]],
)
def test_a_bad_list_is_refused_with_a_reason_and_nothing_changes(site, bad):
    response = _change(_operator(), site, bad)
    assert response.status_code == 200  # the form again, with the error
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["redact_params"], errors
    site.refresh_from_db()
    assert site.redact_params == []


# --- the site's own settings page (per-site admins) ---------------------------------------


def _save(client, site, origins: str, redact: str):
    return client.post(
        f"/sites/{site.id}/site", {"allowed_origins": origins, "redact_params": redact}
    )


def test_a_site_admin_changes_origins_and_redaction_and_the_collector_follows(
    client, analyst, site
):
    from tests.support.events import event, post

    member(analyst, site, "admin")  # a site admin, not an installation admin or staff
    assert not analyst.is_staff
    response = _save(client, site, "https://new.example\nhttps://shop.example/", "email, -code")
    assert response.status_code == 302
    site.refresh_from_db()
    assert site.allowed_origins == ["https://new.example", "https://shop.example"]
    assert site.redact_params == ["email", "-code"]
    [entry] = AdminAction.objects.filter(action="site.change")
    assert entry.actor == analyst
    assert set(entry.details["changed"]) == {"allowed_origins", "redact_params"}
    page = client.get(f"/sites/{site.id}/site").content.decode()
    assert 'data-redact="email,-code"' in page and "Saved: allowed origins, redact params" in page

    from django.utils import timezone

    hit = event(timezone.now(), anon="settings-origin")
    assert post(client, site, [hit], origin="https://new.example").status_code == 200
    _save(client, site, "https://new.example", "")
    refused = post(client, site, [hit], origin="https://shop.example")
    assert refused.status_code == 403 and refused.json()["field"] == "origin"


@pytest.mark.parametrize(
    ("origins", "redact", "field"),
    [
        ("javascript:alert(1)", "", "allowed_origins"),
        ("https://shop.example/path", "", "allowed_origins"),
        ("\n".join(f"https://s{i}.example" for i in range(51)), "", "allowed_origins"),
        ("https://shop.example", "e@mail", "redact_params"),
        ("https://shop.example", 'x"><script>', "redact_params"),
    ],
)
def test_bad_settings_are_refused_with_the_field_and_nothing_changes(
    client, analyst, site, origins, redact, field
):
    member(analyst, site, "admin")
    response = _save(client, site, origins, redact)
    assert response.status_code == 400
    assert list(response.context["form"].errors) == [field]
    assert f"{field}: " in response.content.decode()
    site.refresh_from_db()
    assert site.allowed_origins == ["https://shop.example"] and site.redact_params == []


def test_analysts_and_strangers_cannot_change_a_site(client, analyst, site):
    assert _save(client, site, "https://evil.example", "").status_code == 403  # a member
    stranger = User.objects.create_user("stranger", password="pw-stranger-1")
    client.force_login(stranger)
    assert _save(client, site, "https://evil.example", "").status_code == 404
    site.refresh_from_db()
    assert site.allowed_origins == ["https://shop.example"]


# --- the site's time zone ----------------------------------------------------------------


def test_a_site_admin_sets_the_time_zone_from_the_list_and_it_is_shown(client, analyst, site):
    member(analyst, site, "admin")
    page = client.get(f"/sites/{site.id}/site").content.decode()
    assert '<datalist id="zone-names">' in page and '<option value="Europe/Berlin">' in page
    assert 'list="zone-names"' in page and "<dd>UTC</dd>" in page
    response = client.post(
        f"/sites/{site.id}/site",
        {
            "allowed_origins": "https://shop.example",
            "redact_params": "",
            "time_zone": "Europe/Berlin",
        },
    )
    assert response.status_code == 302
    site.refresh_from_db()
    assert site.time_zone == "Europe/Berlin"
    [entry] = AdminAction.objects.filter(action="site.change")
    assert (
        entry.details["changed"] == ["time_zone"] and entry.details["time_zone"] == "Europe/Berlin"
    )
    page = client.get(f"/sites/{site.id}/site").content.decode()
    assert "<dd>Europe/Berlin</dd>" in page and "Saved: time zone" in page
    assert 'value="Europe/Berlin"' in page  # the form shows what is set


@pytest.mark.parametrize("bad", ["Mars/Olympus", "berlin", "../../etc/passwd", "x" * 100])
def test_a_bad_time_zone_is_refused_naming_the_field_and_nothing_else_is_lost(
    client, analyst, site, bad
):
    member(analyst, site, "admin")
    response = client.post(
        f"/sites/{site.id}/site",
        {"allowed_origins": "https://new.example", "redact_params": "email", "time_zone": bad},
    )
    assert response.status_code == 400
    assert list(response.context["form"].errors) == ["time_zone"]
    page = response.content.decode()
    assert "time_zone: " in page
    assert "https://new.example" in page and 'value="email"' in page  # what was typed stays
    site.refresh_from_db()
    assert site.time_zone == "UTC" and site.allowed_origins == ["https://shop.example"]


def test_the_admin_refuses_a_bad_time_zone(site):
    response = _operator().post(
        f"/admin/sessions_app/site/{site.pk}/change/",
        {
            "name": site.name,
            "allowed_origins": "[]",
            "redact_params": "[]",
            "enabled": "on",
            "event_shards": 1,
            "time_zone": "Mars/Olympus",
            "replay_sample": 100,
            "replay_retention_days": 30,
        },
    )
    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["time_zone"]
    site.refresh_from_db()
    assert site.time_zone == "UTC"
