"""The bootstrap admin password goes through the password validators: a weak
CLICKSTREAM_ADMIN_PASSWORD stops bootstrap_local with a clear error; a generated one passes."""

from __future__ import annotations

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.management import CommandError, call_command

from sessions_app.domain.ledger import sites
from sessions_app.foundation.models import Site

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("password", "too common"),
        ("admin", "too short"),
        ("73915548206", "entirely numeric"),
        ("admin123!", "too similar to the username"),
    ],
)
def test_a_weak_admin_password_is_refused_before_anything_is_created(
    settings, django_user_model, password, reason
) -> None:
    settings.CLICKSTREAM_ADMIN_PASSWORD = password
    sites = Site.objects.count()
    with pytest.raises(CommandError) as error:
        call_command("bootstrap_local", "--users", "0")
    message = str(error.value)
    assert message.startswith("CLICKSTREAM_ADMIN_PASSWORD is too weak:")
    assert reason in message
    assert "unset it to have a password generated" in message
    assert not django_user_model.objects.filter(username="admin").exists()
    assert Site.objects.count() == sites


def test_a_strong_admin_password_is_used(settings, django_user_model, tmp_path) -> None:
    settings.CLICKSTREAM_ADMIN_PASSWORD = "plum-Vortex-84-lantern"
    settings.STATE_DIR = tmp_path
    call_command("bootstrap_local", "--users", "0")
    assert django_user_model.objects.get(username="admin").check_password("plum-Vortex-84-lantern")


def test_a_generated_admin_password_passes_the_validators(settings, tmp_path) -> None:
    settings.CLICKSTREAM_ADMIN_PASSWORD = ""
    login = sites.admin_ensure(password_file=tmp_path / "admin_password")
    assert login.created and login.password
    validate_password(login.password, user=login_user(login.username))


def login_user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)
