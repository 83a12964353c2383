"""A real Celery worker process consumes from the real Redis and writes to Cassandra."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import redis

from sessions_app import tasks
from sessions_app.domain.system import health
from tests.support.sealing import bucket_aggregate

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
ANALYSIS = "analysis"  # the Celery queue of the analysis fan-out


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


@pytest.mark.django_db(transaction=True, databases=["default", "cassandra"])
def test_queued_analysis_scans_do_not_delay_sealing_or_erasure(
    site, settings, celery_worker_process
) -> None:
    """50 funnel day scans wait on the analysis queue (no worker takes it here); the
    default worker still seals an hour and runs an erasure in its usual time."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from sessions_app.domain.ingest.pipeline import Source, events_record
    from sessions_app.features.funnels import defs, queue
    from sessions_app.foundation.core import timebuckets
    from sessions_app.foundation.models import BucketState, ErasureRequest, Suppression
    from tests.support.events import event

    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    visits = [event(hour + timedelta(minutes=m), anon=f"v{m}") for m in (5, 6, 7)]
    earlier = hour - timedelta(hours=2)
    gone = [event(earlier + timedelta(minutes=m), anon="gone") for m in (1, 2)]
    events_record(source=Source(site=site, received_at=now), raw_events=visits + gone)
    definition = {"steps": [{"kind": "pageview", "path": "/"}, {"kind": "click", "selector": "a"}]}
    funnel = defs.funnel_create(site=site, name="backlog", definition=definition)
    settings.ANALYSIS_TASKS_PER_SITE = 50
    days = [timebuckets.floor(now, "day") - timedelta(days=n) for n in range(1, 51)]
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    waiting = broker.llen(ANALYSIS)  # what earlier tests of this worker queued there
    try:
        queued = queue.fan_out(
            site_id=site.id, version_id=funnel.current.pk, digest=funnel.current.digest, days=days
        )
        assert queued == 50 and broker.llen(ANALYSIS) == waiting + 50
        root = User.objects.create_superuser("root", password="pw-root-123")
        request = ErasureRequest.objects.create(
            site=site, key="gone", kind="anonymous_id", requested_by=root, requested_by_name="root"
        )
        Suppression.objects.create(site=site, key="gone", erasure=request)
        # The worker's own settings wait 20 s for collectors: date the suppression back.
        Suppression.objects.filter(key="gone").update(created_at=now - timedelta(minutes=5))
        started = time.monotonic()
        tasks.seal_bucket.delay(str(site.id), "hour", hour.isoformat())
        tasks.erase_user.delay(str(request.pk))
        state = BucketState.objects.filter(site=site, granularity="hour", bucket=hour)
        while time.monotonic() < started + 60:
            request.refresh_from_db()
            if request.finished and state.get().state == BucketState.SEALED:
                break
            time.sleep(0.3)
        assert state.get().state == BucketState.SEALED
        assert request.state == ErasureRequest.DONE, request.error
        sealed = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
        assert sealed["events"] == 3
        assert broker.llen(ANALYSIS) == waiting + 50  # every scan still waits for its worker
    finally:
        broker.delete(ANALYSIS)
        queue.scans_forget(site_id=site.id)
