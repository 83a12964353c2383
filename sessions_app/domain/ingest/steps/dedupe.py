"""Step dedupe: keep the events seen here first.

Redis, one Lua call (domain/ingest/coordination.py): a SET NX mark per client event id (the
first sighting wins), each visitor's lock and cached session state. Redis keeps no copy
of its marks: after a restart or a flush, or while it is down, a resent beacon looks
new. Only an event no later than the end of its visitor's latest known session can have
been stored before, so those alone (never a tracker's usual beacon) are looked up in
their user_events_by_bucket partitions, and counted as duplicates if they are there.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime

from django.conf import settings

from sessions_app.domain.ingest import coordination
from sessions_app.domain.ingest.context import Deduped, released_on_failure
from sessions_app.domain.ingest.order import Candidate
from sessions_app.domain.ingest.plan_writes import user_events_present
from sessions_app.domain.ingest.state import SessionState
from sessions_app.domain.ledger.widths import user_widths
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.tables import user_sessions


def dedupe(site_id: uuid.UUID, candidates: list[Candidate]) -> Deduped:
    """Claim the request's events and visitors in Redis; keep the events not seen before.
    A failure once claimed releases the claim (StorageUnavailable: the client retries)."""
    claim = coordination.begin(
        site_id=site_id,
        client_ids=[c.event.client_id for c in candidates],
        user_keys=sorted({c.user_key for c in candidates}),
        dedup_ttl=int(settings.DEDUP_TTL.total_seconds()),
    )
    with released_on_failure(claim):
        fresh = [c for c, new in zip(candidates, claim.fresh, strict=True) if new]
        current = _current(site_id, sorted({c.user_key for c in fresh}), claim.states)
        if fresh:
            stored = _already_stored(site_id, fresh, current)
            fresh = [c for c in fresh if c.event_id not in stored]
    return Deduped(claim=claim, fresh=fresh, current=current)


def _current(
    site_id: uuid.UUID, user_keys: list[str], cached: dict[str, str | None]
) -> dict[str, SessionState | None]:
    """Return each user's current session from the Redis cache, else from Cassandra."""
    states: dict[str, SessionState | None] = {}
    if not user_keys:
        return states
    missing = []
    for user_key in user_keys:
        text = cached.get(user_key)
        if text:
            states[user_key] = SessionState.from_json(text)
        else:
            missing.append(user_key)
    latest = user_sessions.sessions_latest(site_id=site_id, user_keys=missing)
    for user_key in missing:
        row = latest.get(user_key)
        states[user_key] = SessionState.from_row(row) if row else None
    return states


def _already_stored(
    site_id: uuid.UUID, fresh: list[Candidate], current: dict[str, SessionState | None]
) -> set[uuid.UUID]:
    """Return the ids of events Redis called new that are already in Cassandra."""
    maybe: dict[tuple[str, datetime], list[uuid.UUID]] = defaultdict(list)
    histories: dict[str, list[tuple[datetime, timebuckets.Width]]] | None = None
    for c in fresh:
        state = current.get(c.user_key)
        if state is None or c.ts > state.last_seen_at:
            continue
        if histories is None:
            histories = user_widths(site_id)
        bucket = timebuckets.bucket_of(
            c.ts, settings.USER_EVENTS_BUCKET, histories.get(c.user_key, [])
        )
        maybe[c.user_key, bucket].append(c.event_id)
    return user_events_present(site_id=site_id, partitions=maybe) if maybe else set()
