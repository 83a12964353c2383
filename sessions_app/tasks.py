"""Celery tasks: thin adapters around services; the schedule lives in settings."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.contrib.auth import get_user_model
from django.utils import timezone

from sessions_app.domain.aggregates import seal, states
from sessions_app.domain.erasure import erasures
from sessions_app.domain.ingest.redo import txlog_redo
from sessions_app.domain.jobs import goal_backfill, purge
from sessions_app.domain.ledger import shards
from sessions_app.domain.system import health
from sessions_app.features.funnels import defs, queue, results, scan
from sessions_app.features.funnels.spec import funnel_compile
from sessions_app.foundation.models import PurgeRun, Site


@shared_task(acks_late=True, soft_time_limit=20, time_limit=30, max_retries=3)
def pipeline_heartbeat(beat_at: str | None = None) -> str:
    """Record that beat, the broker, a worker and Cassandra all work end to end."""
    now = timezone.now()
    sent = datetime.fromisoformat(beat_at) if beat_at else now
    return health.heartbeat_record(beat_at=sent, now=now)


@shared_task(acks_late=True, soft_time_limit=240, time_limit=300, max_retries=3)
def redo_transaction_log() -> int:
    """Apply transaction-log entries whose apply step never finished."""
    return txlog_redo(now=timezone.now())


@shared_task(acks_late=True, soft_time_limit=120, time_limit=180, max_retries=3)
def adjust_event_shards() -> dict[str, tuple[int, int]]:
    """Resize each site's event shards to its busiest recent hour (hot partitions)."""
    return shards.event_shards_adjust(now=timezone.now())


@shared_task(acks_late=True, soft_time_limit=60, time_limit=90, max_retries=3)
def seal_due_buckets() -> int:
    """Enqueue one seal task per due bucket; the state lives in SQL, not in the queue."""
    due = states.buckets_due(now=timezone.now())
    for site_id, granularity, bucket in due:
        seal_bucket.delay(str(site_id), granularity, bucket.isoformat())
    return len(due)


@shared_task(
    bind=True,
    acks_late=True,
    soft_time_limit=240,
    time_limit=300,
    max_retries=5,
    default_retry_delay=30,
)
def seal_bucket(self: Any, site_id: str, granularity: str, bucket: str) -> bool:
    """Seal one site's bucket: hours from raw events, days and months from finer buckets.

    Safe to run twice or concurrently: every value written is computed, not added.
    """
    start, now = datetime.fromisoformat(bucket), timezone.now()
    try:
        if granularity == "hour":
            return seal.bucket_seal(site_id=site_id, hour=start, now=now)
        return seal.bucket_rollup(site_id=site_id, granularity=granularity, bucket=start, now=now)
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # Cassandra timeouts and the like: try again later
        raise self.retry(exc=exc) from exc


@shared_task(acks_late=True, soft_time_limit=240, time_limit=300, max_retries=3)
def purge_expired_partitions(requested_by: int | None = None) -> dict[str, Any]:
    """Delete whole bucket partitions past their retention, at most PURGE_MAX_PARTITIONS a run.

    Re-running is harmless: deletes are idempotent and the watermarks only move forward.
    """
    user = get_user_model().objects.filter(pk=requested_by).first() if requested_by else None
    run = purge.partitions_purge(
        now=timezone.now(),
        trigger=PurgeRun.ADMIN if requested_by else PurgeRun.BEAT,
        requested_by=user,
    )
    return {"run": run.pk, "probed": run.probed, "deleted": run.deleted, "more": run.more_left}


# On the `analysis` queue, in one of its site's places there (domain/jobs/analysis_queue.py).
@shared_task(acks_late=True, soft_time_limit=3000, time_limit=3300, max_retries=0)
def backfill_goal(
    goal_id: int, site_id: str | None = None, claim: str | None = None
) -> dict[str, int]:
    """Count a new or changed goal in the sealed hours whose raw rows are kept (progress
    on the goal); the goal says failed if it stops. Sent by `goal_backfill.backfill_queue` with
    the place it holds (`claim`): one at a time a goal, a lapsed claim's task does nothing."""
    return goal_backfill.goal_backfill(
        goal_id=goal_id, now=timezone.now(), site_id=site_id, claim=claim
    )


@shared_task(acks_late=True, soft_time_limit=30, time_limit=60, max_retries=3)
def resume_goal_backfills() -> int:
    """Send the goal backfills that wait for a place on the analysis queue, and those whose
    task was lost (its claim lapsed)."""
    return goal_backfill.backfills_resume()


# Below the broker's visibility timeout (3,600 s), or Redis would hand a running
# erasure to a second worker.
ERASURE_SOFT_LIMIT, ERASURE_HARD_LIMIT = 3000, 3300


@shared_task(
    bind=True,
    acks_late=True,
    soft_time_limit=ERASURE_SOFT_LIMIT,
    time_limit=ERASURE_HARD_LIMIT,
    max_retries=3,
    default_retry_delay=60,
)
def erase_user(self: Any, request_id: str) -> dict[str, int]:
    """Erase one request's user keys everywhere and reseal the aggregates they were in.

    Safe to run again: rows already deleted are not found twice.
    """
    try:
        return erasures.user_erase(request_id=request_id, now=timezone.now()).counts
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # Cassandra timeouts and the like: the request says failed
        raise self.retry(exc=exc) from exc


@shared_task(acks_late=True, soft_time_limit=30, time_limit=60, max_retries=3)
def resume_erasures() -> int:
    """Enqueue again the erasures whose task was lost (a Redis flush, a killed worker)."""
    stalled = erasures.erasures_stalled(
        now=timezone.now(), after=timedelta(seconds=ERASURE_HARD_LIMIT + 60)
    )
    for request in stalled:
        erase_user.delay(str(request.pk))
    return len(stalled)


# On the `analysis` queue (CELERY_TASK_ROUTES), apart from sealing and erasure.
@shared_task(acks_late=True, soft_time_limit=240, time_limit=300, max_retries=2)
def funnel_day(site_id: str, version_id: int, day: str, digest: str) -> int:
    """Scan one day for a funnel definition and cache it (fanned out by a cold result);
    return the events it read. Only a funnel's current version is scanned: a scan queued
    for a version edited away since (or deleted) is dropped."""
    when = datetime.fromisoformat(day)
    try:
        version = defs.version_current(version_id)
        if version is None:
            return 0
        funnel = funnel_compile(version.definition)
        if funnel.key != digest:  # a goal it names was edited since: that result is asked anew
            return 0
        part = scan.day_compute(
            site=Site.objects.get(pk=site_id),
            funnel=funnel,
            digest=digest,
            day=when,
            summarize=results.day_summary,
        )
    finally:
        queue.day_done(site_id=site_id, digest=digest, day=when)
        goal_backfill.backfills_resume(site_id=site_id)  # a place is free: a waiting backfill first
    return part.scanned
