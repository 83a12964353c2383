"""Step queue: Redis, one Lua call (domain/ingest/coordination.py): the new session states
cached, the visitors' locks released, the plan pushed onto the applier queue (only
while an applier is alive and the queue has room), the live counters of the minute.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings

from sessions_app.domain.ingest import coordination, realtime
from sessions_app.domain.ingest.context import Intake


def queue(intake: Intake) -> None:
    """Hand the logged plan to the applier (else the apply step writes it) and release
    the request's claim."""
    assert intake.claim is not None  # the dedupe step's
    fresh, received_at = intake.fresh, intake.received_at
    intake.outcome.queued = coordination.finish(
        intake.claim,
        states={k: v.to_json() for k, v in intake.states.items()},
        ttl=int((settings.SESSION_INACTIVITY + timedelta(minutes=5)).total_seconds()),
        enqueue=intake.payload if settings.APPLY_QUEUE else None,
        now=None if intake.is_bot else realtime.of_candidates(fresh, now=received_at),
        minute=received_at,
    )
