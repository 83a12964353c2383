"""A site admin turns session replay on: the settings, the snippet, and bad values named."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from sessions_app.foundation.models import AdminAction
from tests.support.accounts import member

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, site):
    member(User.objects.create_user("adi", password="pw-adi-123"), site, "admin")
    client.login(username="adi", password="pw-adi-123")
    return client


def _form(site, **changes):
    form = {"allowed_origins": "\n".join(site.allowed_origins), "time_zone": "UTC"}
    return {**form, **changes}


def test_replay_on_puts_its_settings_into_the_snippet(admin_client, site):
    url = f"/sites/{site.id}/site"
    assert "data-replay" not in admin_client.get(url).text
    response = admin_client.post(
        url,
        _form(
            site,
            replay="on",
            replay_sample="25",
            replay_mask_text="on",
            replay_exclude="/account/*\n/checkout/pay",
            replay_retention_days="10",
        ),
    )
    assert response.status_code == 302
    site.refresh_from_db()
    assert (site.replay, site.replay_sample, site.replay_mask_text) == (True, 25, True)
    assert site.replay_exclude == ["/account/*", "/checkout/pay"]
    assert site.replay_retention_days == 10
    snippet = admin_client.get(url).text
    assert 'data-replay="25"' in snippet and 'data-replay-mask="text"' in snippet
    assert 'data-replay-exclude="/account/*,/checkout/pay"' in snippet
    [audit] = AdminAction.objects.filter(action="site.change")
    assert audit.details["replay"] is True and "replay_exclude" in audit.details["changed"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("replay_exclude", "account/*", "not a path pattern"),
        ("replay_sample", "101", "less than or equal to 100"),
        ("replay_retention_days", "0", "greater than or equal to 1"),
    ],
)
def test_a_bad_replay_setting_is_named_on_the_page(admin_client, site, field, value, message):
    response = admin_client.post(f"/sites/{site.id}/site", _form(site, **{field: value}))
    assert response.status_code == 400
    assert f"{field}: " in response.text and message in response.text
    site.refresh_from_db()
    assert site.replay is False and site.replay_exclude == []
