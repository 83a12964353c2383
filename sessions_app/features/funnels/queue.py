"""Funnel day scans on the analysis queue, within the site's places there.

A cold result fans its uncached sealed days out as `funnel_day` tasks, routed to the
Celery queue `analysis` (CELERY_TASK_ROUTES) that only the analysis worker consumes, so
a backlog of scans never waits in front of sealing, erasure or the heartbeat. A day is
sent once it holds one of the site's places (domain/jobs/analysis_queue.py: at most
ANALYSIS_TASKS_PER_SITE of a site's scans and goal backfills together; member: digest
and day). A result claims free places for its days in one script; the days left out
stay pending and are claimed when the result is asked again (the page refreshes while
days are pending). A task gives its place back when it ends; a lost task's place lapses
after ANALYSIS_TASK_TTL.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from celery import current_app
from django.conf import settings

from sessions_app.domain.jobs import analysis_queue

TASK = "sessions_app.tasks.funnel_day"  # by name: the tasks module imports the analysis


def _member(digest: str, day: datetime) -> str:
    return f"{digest}:{day.date().isoformat()}"


def fan_out(*, site_id: uuid.UUID, version_id: int, digest: str, days: list[datetime]) -> int:
    """Queue a `funnel_day` task for each day not queued already, while the site has
    places left; return how many were queued."""
    wanted = {_member(digest, day): day for day in days}
    claimed = analysis_queue.claim_many(
        site_id=site_id, members=list(wanted), ttl=settings.ANALYSIS_TASK_TTL
    )
    for member in claimed:
        day = wanted[member]
        current_app.send_task(TASK, args=[str(site_id), version_id, day.isoformat(), digest])
    return len(claimed)


def day_done(*, site_id: uuid.UUID | str, digest: str, day: datetime) -> None:
    """A day task finished, failed or was dropped: give its place back."""
    analysis_queue.release(site_id=site_id, member=_member(digest, day))


def scans_in_flight(*, site_id: uuid.UUID | str) -> int:
    """How many of the site's analysis tasks (day scans and goal backfills) are queued or
    running (claims not lapsed)."""
    return analysis_queue.in_flight(site_id=site_id)


def scans_forget(*, site_id: uuid.UUID | str) -> None:
    """Drop every claim of the site (its tasks purged from the queue by the caller)."""
    analysis_queue.forget(site_id=site_id)
