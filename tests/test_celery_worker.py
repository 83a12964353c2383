"""A real Celery worker process consumes from the real Redis and writes to Cassandra."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from sessions_app import tasks
from sessions_app.system import health

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def test_worker_runs_heartbeat_task_into_cassandra(celery_worker_process, now) -> None:
    beat_at = now + timedelta(milliseconds=123)
    result = tasks.pipeline_heartbeat.apply_async(args=[beat_at.isoformat()])
    worker = result.get(timeout=30)

    deadline = time.monotonic() + 10
    rows = []
    while time.monotonic() < deadline and not rows:
        rows = [
            r for r in health.heartbeat_list() if r["worker"] == worker and r["beat_at"] == beat_at
        ]
        time.sleep(0.2)
    assert rows, "the worker's heartbeat row never reached Cassandra"
    assert celery_worker_process.poll() is None


def test_beat_schedule_lives_in_settings(settings) -> None:
    from clickstream.celery import app

    assert app.conf.beat_schedule == settings.CELERY_BEAT_SCHEDULE
    assert "sessions_app.tasks.pipeline_heartbeat" in {
        entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()
    }
    assert app.conf.task_acks_late is True
    assert app.conf.task_time_limit and app.conf.task_soft_time_limit
