"""A site's own list of URL parameters the tracker drops (beside its default secret names):
edited by an admin, validated, audited, and rendered into the snippet as data-redact.
The tracker's side: tests/tracker (helpers and fake page) and tests/e2e/test_tracker.py."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from sessions_app.models import AdminAction, Site
from tests.conftest import member

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
        },
    )


def test_an_admin_sets_the_list_and_the_snippet_carries_it(client, analyst, site):
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
