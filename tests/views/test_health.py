"""GET /healthz: a cheap liveness answer for anyone (Cassandra and Redis, ok flags only).
GET /healthz/deep: every dependency with details (versions, worker names, the applier),
for installation admins (a superuser or the `admin` group, by login or API token) only:
404 without credentials, 403 for other users, 401 for a bad token; computed at most once
a second."""

from __future__ import annotations

import socket
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from sessions_app.domain.system import health
from sessions_app.foundation.models import RedoWatermark

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
LIVE = {"ok": True, "checks": {"cassandra": {"ok": True}, "redis": {"ok": True}}}


@pytest.fixture(autouse=True)
def _fresh_deep_report():
    """Each test sees its own settings' report, not one cached by the test before."""
    health.health_report_forget()
    yield
    health.health_report_forget()


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def operator(client, django_user_model):
    """Log the client in as a member of the installation's `admin` group."""
    user = django_user_model.objects.create_user("operator", password="pw-op-123456")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client.force_login(user)
    return user


@pytest.fixture
def admin_token(django_user_model) -> str:
    """The API token of a superuser, made by `manage.py create_api_token`."""
    django_user_model.objects.create_superuser("root", password="pw-root-123456")
    out = StringIO()
    call_command("create_api_token", "root", stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def test_anonymous_liveness_is_ok_flags_without_worker_names(
    client, admin_token, celery_worker_process
) -> None:
    deep = client.get("/healthz/deep", HTTP_AUTHORIZATION=f"Token {admin_token}")
    assert deep.status_code == 200, deep.json()
    workers = deep.json()["checks"]["celery"]["detail"].split(": ", 1)[1].split(", ")
    assert workers and all("@" in name for name in workers)

    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == LIVE
    body = response.content.decode()
    assert not [name for name in workers if name in body]
    assert "Cassandra 5.0" not in body and "applier" not in body
    assert response["Cache-Control"].startswith("max-age=0")
    assert client.head("/healthz").status_code == 200


def test_deep_check_with_a_token_reports_versions_workers_and_applier(
    client, admin_token, celery_worker_process
) -> None:
    response = client.get("/healthz/deep", HTTP_AUTHORIZATION=f"Token {admin_token}")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["ok"] is True
    assert set(body["checks"]) == {"cassandra", "redis", "celery", "redo"}
    assert body["redo"]["unapplied"] == 0 and body["redo"]["window_seconds"] == 7200
    assert "Cassandra 5.0" in body["checks"]["cassandra"]["detail"]
    assert "worker" in body["checks"]["celery"]["detail"]
    assert body["applier"]["max"] > 0
    assert {"queued", "alive", "inline", "oldest_ms", "lagging"} <= set(body["applier"])


def test_deep_check_with_a_login_session(client, operator, celery_worker_process) -> None:
    response = client.get("/healthz/deep")
    assert response.status_code == 200, response.json()
    assert "worker" in response.json()["checks"]["celery"]["detail"]


def test_deep_check_is_not_there_for_anonymous_callers_and_refuses_bad_tokens(client) -> None:
    response = client.get("/healthz/deep")
    assert response.status_code == 404
    assert "checks" not in response.json()
    bad = client.get("/healthz/deep", HTTP_AUTHORIZATION="Token not-a-real-token")
    assert bad.status_code == 401 and "checks" not in bad.json()


def test_deep_check_refuses_analysts_by_login_and_by_token(client, analyst, token) -> None:
    response = client.get("/healthz/deep")
    assert response.status_code == 403 and "checks" not in response.json()
    client.logout()
    by_token = client.get("/healthz/deep", HTTP_AUTHORIZATION=f"Token {token}")
    assert by_token.status_code == 403 and "checks" not in by_token.json()


def test_deep_check_runs_at_most_once_a_second(client, operator, monkeypatch) -> None:
    """Five requests in a row run the probes once (a spy counts the real report's runs)."""
    runs, report = [], health.health_report

    def counted() -> dict:
        runs.append(1)
        return report()

    monkeypatch.setattr(health, "health_report", counted)
    answers = [client.get("/healthz/deep") for _ in range(5)]
    assert len(runs) == 1
    assert {a.status_code for a in answers} <= {200, 503} and "checks" in answers[-1].json()
    assert all(a.json() == answers[0].json() for a in answers)
    time.sleep(health.DEEP_CACHE_SECONDS)
    client.get("/healthz/deep")
    assert len(runs) == 2  # a second later, the probes run again


def test_liveness_makes_no_broker_call(client, operator, settings) -> None:
    """With the broker on a closed port, liveness still answers 200; the deep check,
    which pings the workers through the broker, fails on it."""
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    client.logout()
    assert client.get("/healthz").json() == LIVE
    client.force_login(operator)
    deep = client.get("/healthz/deep")
    assert deep.status_code == 503
    assert deep.json()["failed"] == ["celery"]
    assert "broker unreachable" in deep.json()["reason"]


def test_redis_down_is_503_naming_redis(client, operator) -> None:
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{_closed_port()}/0"):
        deep = client.get("/healthz/deep")
        client.logout()
        live = client.get("/healthz")
    assert live.status_code == 503
    assert live.json()["failed"] == ["redis"]
    assert "reason" not in live.json()
    assert deep.status_code == 503
    assert "redis" in deep.json()["failed"]
    assert "redis:" in deep.json()["reason"]


def test_missing_keyspace_is_503_naming_cassandra(client, operator) -> None:
    conn = connections["cassandra"]
    original = conn.settings_dict["NAME"]
    conn.settings_dict["NAME"] = "test_keyspace_that_does_not_exist"
    try:
        deep = client.get("/healthz/deep")
        client.logout()
        live = client.get("/healthz")
    finally:
        conn.settings_dict["NAME"] = original
    assert live.status_code == 503
    assert live.json()["failed"] == ["cassandra"]
    assert "test_keyspace_that_does_not_exist" not in live.content.decode()
    assert deep.status_code == 503
    assert "cassandra" in deep.json()["failed"]
    assert "test_keyspace_that_does_not_exist" in deep.json()["checks"]["cassandra"]["detail"]


def test_no_worker_is_503_naming_celery_and_liveness_stays_200(client, operator, settings) -> None:
    # Database 9 of the test Redis: a broker no worker listens on.
    settings.CELERY_BROKER_URL = settings.CELERY_BROKER_URL.rsplit("/", 1)[0] + "/9"
    response = client.get("/healthz/deep")
    assert response.status_code == 503
    assert response.json()["failed"] == ["celery"]
    assert "no Celery worker answered" in response.json()["reason"]
    client.logout()
    assert client.get("/healthz").status_code == 200


def test_a_redo_that_stopped_checking_the_log_is_503_naming_redo(client, operator, site):
    # The site's log was last checked three hours ago: whatever was logged since may be
    # unapplied for longer than the redo window (2 h).
    RedoWatermark.objects.filter(site=site).update(
        redone_through=timezone.now() - timedelta(hours=3)
    )
    deep = client.get("/healthz/deep")
    assert deep.status_code == 503
    assert "redo" in deep.json()["failed"]
    assert "longer than the redo window" in deep.json()["checks"]["redo"]["detail"]
    assert deep.json()["redo"]["behind_seconds"] >= 3 * 3600
