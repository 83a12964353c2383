"""A session with a recording, marked on its site_sessions row: the explorer's "has
replay" filter (`replay=true`) reads the mark through its index.

The collector marks a session when it stores a chunk of it (chunks.chunk_accept), once:
a Redis key remembers a marked session for as long as it may get chunks (without Redis
the mark is written again; it is the same cell). The cell's TTL is the site's replay
retention, cut to what is left of the row's own (the sessions' retention from the
session's start, as the goal marks): the mark never outlives the row, nor by much the
recording (its chunks expire from their own writes, the first one's with the mark).
Erasure deletes the row with the mark; no table is added.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from redis.exceptions import RedisError

from sessions_app.domain.ledger import policies
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import uuid_time
from sessions_app.foundation.core.redis_client import redis_client
from sessions_app.foundation.models import Site
from sessions_app.foundation.tables import retention_specs, site_sessions


def marked_key(site_id: uuid.UUID, session_id: uuid.UUID) -> str:
    return f"cs:replay:marked:{site_id}:{session_id}"


def mark_ttl(site: Site, session_id: uuid.UUID, *, now: datetime) -> int:
    """Seconds the mark lives: the site's replay retention, at most the row's time left."""
    row_left = policies.ttl_seconds(retention_specs.SESSIONS) - int(
        (now - uuid_time(session_id)).total_seconds()
    )
    return min(site.replay_retention_days * 86_400, row_left)


def replay_mark(site: Site, session_id: uuid.UUID, *, now: datetime) -> bool:
    """Mark the session as recorded and remember it in Redis; True if the mark was written
    (False: the row is gone). The collector calls it when its budget script found the
    session's Redis key unset (or Redis down: the mark is written again, the same cell)."""
    ttl = mark_ttl(site, session_id, now=now)
    if ttl <= 0:  # the row is gone already
        return False
    statement = prepare(site_sessions.MARK_REPLAY, idempotent=True, write=True)
    cassandra_session().execute(statement, (ttl, *site_sessions.row_key(site.id, session_id)))
    try:
        held = int(settings.SESSION_MAX_DURATION.total_seconds())
        redis_client().set(marked_key(site.id, session_id), "1", ex=held)
    except RedisError:
        pass
    return True
