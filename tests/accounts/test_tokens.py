"""API tokens: stored as digests only, expiring, revocable, rotated by name."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from sessions_app.domain.accounts import tokens
from sessions_app.foundation.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(db):
    return User.objects.create_user("tok", password="pw-tok-123")


def test_the_key_is_never_stored_only_its_digest(user):
    made = tokens.token_create(user=user, name="laptop")
    assert made.key.startswith(tokens.KEY_PREFIX) and len(made.key) == 44
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
        rows = cursor.fetchall()
    stored = " ".join(str(cell) for row in rows for cell in row)
    assert made.key not in stored and made.key[len(tokens.KEY_PREFIX) :] not in stored
    assert made.token.digest == tokens.key_digest(made.key) and made.token.digest in stored
    assert tokens.token_authenticate(made.key) == made.token


def test_every_key_is_new(user):
    keys = {tokens.token_create(user=user, name="same").key for _ in range(20)}
    assert len(keys) == 20


def test_an_expired_token_no_longer_authenticates(user):
    now = timezone.now()
    made = tokens.token_create(user=user, name="short", expires_days=1, now=now)
    assert made.token.expires_at == now + timedelta(days=1)
    assert tokens.token_authenticate(made.key, now=now + timedelta(hours=23)) is not None
    assert tokens.token_authenticate(made.key, now=now + timedelta(days=1)) is None


def test_a_revoked_token_no_longer_authenticates_and_leaves_the_list(user):
    made = tokens.token_create(user=user, name="old")
    kept = tokens.token_create(user=user, name="kept")
    assert tokens.token_revoke(user=user, token_id=made.token.pk)
    assert tokens.token_authenticate(made.key) is None
    assert list(tokens.tokens_of(user)) == [kept.token]
    assert not tokens.token_revoke(user=user, token_id=made.token.pk)  # already revoked


def test_nobody_revokes_another_users_token(user):
    made = tokens.token_create(user=user, name="mine")
    thief = User.objects.create_user("thief", password="pw-thief-1")
    assert not tokens.token_revoke(user=thief, token_id=made.token.pk)
    assert tokens.token_authenticate(made.key) is not None


def test_an_inactive_users_token_does_not_authenticate(user):
    made = tokens.token_create(user=user, name="gone")
    user.is_active = False
    user.save()
    assert tokens.token_authenticate(made.key) is None


def test_last_use_is_recorded_at_most_once_a_minute(user):
    now = timezone.now()
    made = tokens.token_create(user=user, name="used", now=now)
    tokens.token_authenticate(made.key, now=now)
    tokens.token_authenticate(made.key, now=now + timedelta(seconds=30))
    assert ApiToken.objects.get(pk=made.token.pk).last_used_at == now
    tokens.token_authenticate(made.key, now=now + timedelta(minutes=2))
    assert ApiToken.objects.get(pk=made.token.pk).last_used_at == now + timedelta(minutes=2)


@pytest.mark.parametrize(("name", "days"), [("", None), ("   ", None), ("x", 0), ("x", 3661)])
def test_a_token_needs_a_name_and_a_sane_expiry(user, name, days):
    with pytest.raises(ValueError, match=r"^(name|expires)"):
        tokens.token_create(user=user, name=name, expires_days=days)
    assert not ApiToken.objects.exists()


def test_keys_of_the_old_clear_text_table_keep_working_and_leave_it(user):
    """Migration 0004 moves rest_framework.authtoken's keys in as digests, and empties it."""
    import importlib
    from types import SimpleNamespace

    from django.db.migrations.executor import MigrationExecutor

    migration = importlib.import_module("sessions_app.migrations.0004_api_tokens")
    old_key = "4f1c" * 10  # DRF's format: 40 hex characters
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id integer, "
            "created datetime)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)", [old_key, user.pk, timezone.now()]
        )
    try:
        state = MigrationExecutor(connection).loader.project_state(
            ("sessions_app", "0004_api_tokens")
        )
        # It uses only the editor's connection (SQLite's editor refuses to open in a test).
        migration.tokens_rehash(state.apps, SimpleNamespace(connection=connection))
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM authtoken_token")
            assert cursor.fetchone()[0] == 0
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE authtoken_token")
    token = tokens.token_authenticate(old_key)
    assert token is not None and token.user == user and token.digest != old_key
