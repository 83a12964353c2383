"""Celery tasks: thin adapters around services; the schedule lives in settings."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from django.utils import timezone

from sessions_app import services
from sessions_app.collector.pipeline import txlog_replay


@shared_task(acks_late=True, soft_time_limit=20, time_limit=30, max_retries=3)
def pipeline_heartbeat(beat_at: str | None = None) -> str:
    """Record that beat, the broker, a worker and Cassandra all work end to end."""
    now = timezone.now()
    sent = datetime.fromisoformat(beat_at) if beat_at else now
    return services.heartbeat_record(beat_at=sent, now=now)


@shared_task(acks_late=True, soft_time_limit=240, time_limit=300, max_retries=3)
def replay_transaction_log() -> int:
    """Apply transaction-log entries whose apply step never finished."""
    return txlog_replay(now=timezone.now())
