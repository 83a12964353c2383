"""Failed logins lock the account and the client address for a while, with a message on
the login page; the right password is refused during the lock; others are not affected."""

from __future__ import annotations

import socket
import time

import pytest
from django.test import override_settings

from sessions_app.domain.system import logins
from sessions_app.foundation.core.redis_client import redis_client

pytestmark = pytest.mark.django_db
PASSWORD = "correct-horse-battery-9"
ACCOUNT_LOCKED = "Too many failed logins for this account"
ADDRESS_LOCKED = "Too many failed logins from your address"


@pytest.fixture(autouse=True)
def throttle(settings):
    """Short windows; no lock or count left behind for other tests."""
    settings.LOGIN_FAILURES_PER_ACCOUNT = 3
    settings.LOGIN_FAILURES_PER_IP = 5
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 60
    settings.LOGIN_LOCKOUT_SECONDS = 60
    yield settings
    keys = list(redis_client().scan_iter(f"{logins.PREFIX}*"))
    if keys:
        redis_client().delete(*keys)


@pytest.fixture
def users(django_user_model):
    for name in ("alice", "bob", "carol"):
        django_user_model.objects.create_user(name, password=PASSWORD)


def _login(client, username: str, password: str, ip: str):
    client.logout()
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def _logged_in(response) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.wsgi_request.session


def test_failures_lock_the_account_with_a_message(client, users) -> None:
    first = _login(client, "alice", "wrong", "10.0.0.1")
    assert first.status_code == 200
    assert "Wrong username or password." in first.content.decode()
    _login(client, "alice", "wrong", "10.0.0.2")
    third = _login(client, "Alice", "wrong", "10.0.0.3")  # the name's case does not matter
    assert ACCOUNT_LOCKED in third.content.decode()
    assert "Try again in a minute." in third.content.decode()

    refused = _login(client, "alice", PASSWORD, "10.0.0.4")  # the right password, a new address
    assert refused.status_code == 200 and not _logged_in(refused)
    assert ACCOUNT_LOCKED in refused.content.decode()


def test_a_locked_account_leaves_other_accounts_alone(client, users) -> None:
    for n in range(3):
        _login(client, "alice", "wrong", f"10.0.1.{n}")
    assert _logged_in(_login(client, "bob", PASSWORD, "10.0.1.0"))
    assert ACCOUNT_LOCKED in _login(client, "alice", PASSWORD, "10.0.1.9").content.decode()


def test_failures_from_one_address_lock_that_address_only(client, users) -> None:
    for n in range(5):  # five names, each below the account limit
        response = _login(client, f"nobody-{n}", "wrong", "10.0.2.1")
    assert ADDRESS_LOCKED in response.content.decode()
    refused = _login(client, "carol", PASSWORD, "10.0.2.1")
    assert not _logged_in(refused) and ADDRESS_LOCKED in refused.content.decode()
    assert _logged_in(_login(client, "carol", PASSWORD, "10.0.2.2"))


def test_the_lock_expires(client, users, throttle) -> None:
    throttle.LOGIN_LOCKOUT_SECONDS = 1
    for n in range(3):
        _login(client, "alice", "wrong", f"10.0.3.{n}")
    assert not _logged_in(_login(client, "alice", PASSWORD, "10.0.3.9"))
    time.sleep(1.2)
    assert _logged_in(_login(client, "alice", PASSWORD, "10.0.3.9"))


def test_failures_outside_the_window_do_not_add_up(client, users, throttle) -> None:
    throttle.LOGIN_FAILURE_WINDOW_SECONDS = 1
    _login(client, "alice", "wrong", "10.0.4.1")
    _login(client, "alice", "wrong", "10.0.4.1")
    time.sleep(1.2)
    _login(client, "alice", "wrong", "10.0.4.1")
    assert _logged_in(_login(client, "alice", PASSWORD, "10.0.4.1"))


def test_a_good_login_clears_the_accounts_count(client, users) -> None:
    for _ in range(2):
        _login(client, "alice", "wrong", "10.0.5.1")
    assert _logged_in(_login(client, "alice", PASSWORD, "10.0.5.1"))
    for _ in range(2):
        _login(client, "alice", "wrong", "10.0.5.1")
    assert _logged_in(_login(client, "alice", PASSWORD, "10.0.5.1"))


def test_the_admin_login_is_throttled_too(client, django_user_model) -> None:
    django_user_model.objects.create_superuser("root", email="", password=PASSWORD)
    for n in range(3):
        client.post(
            "/admin/login/", {"username": "root", "password": "x"}, REMOTE_ADDR=f"10.0.6.{n}"
        )
    refused = client.post(
        "/admin/login/", {"username": "root", "password": PASSWORD}, REMOTE_ADDR="10.0.6.9"
    )
    assert not _logged_in(refused)
    assert ACCOUNT_LOCKED in _login(client, "root", PASSWORD, "10.0.6.9").content.decode()


def test_redis_keys_hold_neither_the_name_nor_the_address(client, users) -> None:
    _login(client, "alice", "wrong", "10.0.7.1")
    keys = [key.decode() for key in redis_client().scan_iter(f"{logins.PREFIX}*")]
    assert len(keys) == 2
    assert not [key for key in keys if "alice" in key or "10.0.7.1" in key]


def test_redis_down_never_refuses_a_login(client, users) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{port}/0"):
        assert "Wrong username" in _login(client, "alice", "wrong", "10.0.8.1").content.decode()
        assert _logged_in(_login(client, "alice", PASSWORD, "10.0.8.1"))


def test_logins_without_a_request_are_not_throttled(client, users) -> None:
    """The test client's login() passes no request to authenticate(): not a web login."""
    for _ in range(4):
        assert not client.login(username="alice", password="wrong")
    assert client.login(username="alice", password=PASSWORD)
