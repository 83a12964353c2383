"""Step queue: Redis, one Lua call (domain/ingest/coordination.py): the new session states
cached, the visitors' locks released, the plan pushed onto the applier queue (only
while an applier is alive and the queue has room), the live counters of the minute.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings

from sessions_app.domain.ingest import coordination, realtime
from sessions_app.domain.ingest.context import Deduped, Enriched, Request, Sessions


def queue(
    request: Request,
    deduped: Deduped,
    enriched: Enriched,
    sessions: Sessions,
    payload: bytes | None,
) -> bool:
    """Hand the logged plan to the applier and release the request's claim; return whether
    the applier took it (else the apply step writes it)."""
    received_at = request.received_at
    return coordination.finish(
        deduped.claim,
        states={k: v.to_json() for k, v in sessions.states.items()},
        ttl=int((settings.SESSION_INACTIVITY + timedelta(minutes=5)).total_seconds()),
        enqueue=payload if settings.APPLY_QUEUE else None,
        now=None if enriched.is_bot else realtime.of_candidates(deduped.fresh, now=received_at),
        minute=received_at,
    )
