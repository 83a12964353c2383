"""Management commands: create_site, generate_clicks, create_api_token, grant_site_access."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from sessions_app.foundation.models import AdminAction, ApiToken, Site
from sessions_app.foundation.tables import user_sessions

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def test_create_site_prints_the_key_last() -> None:
    out = StringIO()
    call_command(
        "create_site",
        "Shop",
        "--origin",
        "https://shop.example",
        "--origin",
        "https://www.shop.example/",
        "--events-per-second",
        "2000",
        stdout=out,
    )
    key = out.getvalue().strip().splitlines()[-1]
    site = Site.objects.get(key=key)
    assert site.allowed_origins == ["https://shop.example", "https://www.shop.example"]
    # 2000 events/s x 3600 s x 400 B = 2.88 GB an hour: 29 shards of <= 100 MB.
    assert site.event_shards == 29


@pytest.mark.parametrize(
    "origin", ["https://shop.example/path", "https://[shop.example", "https://shop.example:port"]
)
def test_create_site_refuses_an_origin_that_is_not_scheme_host_port(origin) -> None:
    with pytest.raises(CommandError, match="expected scheme://host"):
        call_command("create_site", "Shop", "--origin", origin)


def test_generate_clicks_goes_through_the_collector() -> None:
    out = StringIO()
    call_command("create_site", "Gen", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    site = Site.objects.get(key=key)
    out = StringIO()
    call_command(
        "generate_clicks",
        "--site",
        key,
        "--users",
        "6",
        "--days",
        "2",
        stdout=out,
        stderr=StringIO(),
    )
    accepted = int(out.getvalue().split()[0])
    assert accepted > 0
    sessions = user_sessions.session_list(site_id=site.id, user_key="anon-7-00001")
    assert sessions and all(s["event_count"] >= 2 for s in sessions)
    assert sessions[0]["started_at"] <= timezone.now()
    # Running it again only produces duplicates.
    out = StringIO()
    call_command(
        "generate_clicks",
        "--site",
        key,
        "--users",
        "6",
        "--days",
        "2",
        stdout=out,
        stderr=StringIO(),
    )
    assert out.getvalue().split()[0] == "0"


def test_generate_clicks_names_a_wrong_key() -> None:
    with pytest.raises(CommandError, match="no site has this key"):
        call_command("generate_clicks", "--site", "cs_nope")


def _token(*args: str) -> tuple[str, str]:
    out = StringIO()
    call_command("create_api_token", *args, stdout=out)
    *notes, key = out.getvalue().strip().splitlines()
    return " ".join(notes), key


def test_create_api_token_prints_a_key_that_works_once_shown(site) -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    from tests.support.accounts import member

    member(User.objects.create_user("cli", password="pw-cli-123"), site)
    note, key = _token("cli", "--name", "ci", "--expires-days", "7")
    assert "'ci'" in note and "not shown again" in note
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get(f"/api/sites/{site.id}/report").status_code == 200
    token = ApiToken.objects.get(user__username="cli", name="ci")
    assert token.expires_at is not None and key not in (token.digest, token.prefix)
    # The same name again rotates: the old key stops working, the new one works.
    note, new_key = _token("cli", "--name", "ci")
    assert "replacing 1" in note and new_key != key
    assert api.get(f"/api/sites/{site.id}/report").status_code == 401
    assert (
        Client(HTTP_AUTHORIZATION=f"Token {new_key}")
        .get(f"/api/sites/{site.id}/report")
        .status_code
        == 200
    )


def test_create_api_token_refuses_bad_input_and_revokes_nothing(db) -> None:
    from django.contrib.auth.models import User

    with pytest.raises(CommandError, match="no user"):
        _token("nobody")
    User.objects.create_user("cli", password="pw-cli-123")
    _, key = _token("cli")
    with pytest.raises(CommandError, match="expires"):
        _token("cli", "--expires-days", "0")
    assert ApiToken.objects.get(user__username="cli", revoked_at__isnull=True).prefix == key[:10]


def test_grant_site_access_gives_and_takes_a_role(site) -> None:
    from django.contrib.auth.models import User

    from sessions_app.domain.permissions import site_role

    user = User.objects.create_user("g", password="pw-g-1234")
    call_command("grant_site_access", "g", str(site.id), "--role", "admin", stdout=StringIO())
    assert site_role(user, site.id) == "admin"
    call_command("grant_site_access", "g", site.key, stdout=StringIO())
    assert site_role(user, site.id) == "analyst"
    call_command("grant_site_access", "g", site.key, "--revoke", stdout=StringIO())
    assert site_role(user, site.id) is None
    assert AdminAction.objects.filter(action__in=["site.grant", "site.revoke"]).count() == 3
    with pytest.raises(CommandError, match="no site"):
        call_command("grant_site_access", "g", "cs_nope")
