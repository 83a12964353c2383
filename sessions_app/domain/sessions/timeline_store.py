"""The timeline's materialized copies: a closed session's whole JSON, an open one's prefix."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from sessions_app.foundation.core import eventdoc
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.tables import session_events


def timeline_store(
    site_id: uuid.UUID, session_id: uuid.UUID, body: bytes, stamp_us: int, ttl: int
) -> None:
    """Store a closed session's whole timeline JSON, stamped `stamp_us` (before the read)."""
    cassandra_session().execute(
        prepare(session_events.STORE_TIMELINE, idempotent=True, write=True),
        (stamp_us, ttl, body, site_id, session_id),
    )


def prefix_extend(
    site_id: uuid.UUID,
    session_id: uuid.UUID,
    user_key: str,
    prefix: Prefix | None,
    docs: list[bytes],
    stamp_us: int,
    ttl: int,
) -> None:
    """Store the prefix grown by the events read that are older than the lag, if enough."""
    cutoff = datetime.fromtimestamp(stamp_us / 1e6, UTC) - settings.TIMELINE_PREFIX_LAG
    aged = 0
    while aged < len(docs) and eventdoc.doc_time(docs[aged]) < cutoff:
        aged += 1
    if aged < settings.TIMELINE_PREFIX_MIN_EVENTS:
        return
    fragment = b",".join(docs[:aged])
    if prefix is not None and prefix.events:
        fragment = prefix.events + b"," + fragment
    count = aged + (prefix.count if prefix is not None else 0)
    cassandra_session().execute(
        prepare(session_events.STORE_PREFIX, idempotent=True, write=True),
        (
            stamp_us,
            ttl,
            fragment,
            eventdoc.event_from_doc(docs[aged - 1])["event_id"],
            count,
            user_key,
            site_id,
            session_id,
        ),
    )


@dataclass(frozen=True)
class Prefix:
    """A materialized prefix of an open session: its first events' JSON, up to `upto`."""

    events: bytes  # the events' JSON array without its brackets
    upto: uuid.UUID  # the last event's id
    count: int
    user_key: str
