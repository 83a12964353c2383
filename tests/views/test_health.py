"""GET /healthz reports each dependency, 200 when all answer, 503 naming what failed."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test import override_settings

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def test_healthy_stack_answers_200(client, celery_worker_process) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["ok"] is True
    assert set(body["checks"]) == {"cassandra", "redis", "celery"}
    assert "Cassandra 5.0" in body["checks"]["cassandra"]["detail"]
    assert "worker" in body["checks"]["celery"]["detail"]
    assert body["applier"]["max"] > 0 and {"queued", "alive", "inline"} <= set(body["applier"])


def test_redis_down_is_503_naming_redis(client) -> None:
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert "redis" in response.json()["failed"]
    assert response.json()["reason"].startswith("redis:") or "redis:" in response.json()["reason"]


def test_missing_keyspace_is_503_naming_cassandra(client) -> None:
    conn = connections["cassandra"]
    original = conn.settings_dict["NAME"]
    conn.settings_dict["NAME"] = "test_keyspace_that_does_not_exist"
    try:
        response = client.get("/healthz")
    finally:
        conn.settings_dict["NAME"] = original
    assert response.status_code == 503
    body = response.json()
    assert "cassandra" in body["failed"]
    assert "test_keyspace_that_does_not_exist" in body["checks"]["cassandra"]["detail"]


def test_no_worker_is_503_naming_celery(client, settings) -> None:
    # Database 9 of the test Redis: a broker no worker listens on.
    settings.CELERY_BROKER_URL = settings.CELERY_BROKER_URL.rsplit("/", 1)[0] + "/9"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["celery"]
    assert "no Celery worker answered" in response.json()["reason"]
