"""A session's timeline as the API's JSON: its materialized copy while current, else its rows.

A timeline (the session's summary and up to 1,000 events) changes only when an
event is written into the session's `session_events` partition, and every event
insert also writes that partition's static `touched` cell. After the session has
closed, the first read stores the JSON it built in the static `timeline` cell,
with a write time TIMELINE_MATERIALIZE_MARGIN before that read began; later reads
serve the stored bytes while their write time is later than touched's:

- a late or replayed event rewrites `touched` with a later write time, so the copy
  stops being current and the next read rebuilds it from the rows;
- a write already in flight when the rows were read carries a write time later
  than the copy's (the margin covers driver retries and clock skew between hosts);
- erasure deletes the partition, copy included (its tombstone is newer);
- the copy expires no later than the session's last insert or its start plus the
  raw-event retention, whichever is first.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from sessions_app import buckets, retention, selectors
from sessions_app.api.renderers import dumps
from sessions_app.cassandra import prepare, session

STORE = """
UPDATE {ks}.session_events USING TIMESTAMP ? AND TTL ?
SET timeline = ?, timeline_site = ? WHERE session_id = ?
"""


@dataclass(frozen=True)
class Timeline:
    body: bytes  # {"session": summary, "events": [...]}
    source: str  # "materialized" or "rows"


def session_timeline(*, site_id: uuid.UUID, session_id: uuid.UUID) -> Timeline | None:
    """Return a session's timeline JSON, or None when the site has no such session."""
    state = selectors.timeline_state(session_id=session_id)
    if state is None:
        return None
    if state.current and state.site_id == site_id and state.body is not None:
        return Timeline(state.body, "materialized")
    read_started_us = time.time_ns() // 1000
    events = selectors.session_events(session_id=session_id, site_id=site_id)
    if not events:
        return None
    summary = selectors.session_summary(
        site_id=site_id, user_key=events[0]["user_key"], session_id=session_id
    )
    body = dumps({"session": summary, "events": events})
    stamp_us = read_started_us - int(settings.TIMELINE_MATERIALIZE_MARGIN.total_seconds() * 1e6)
    ttl = _ttl(summary, state)
    if (
        settings.TIMELINE_MATERIALIZE
        and summary is not None
        and _closed(summary)
        and state.touched_us is not None
        and state.touched_us < stamp_us
        and ttl > 0
    ):
        session().execute(
            prepare(STORE, idempotent=True, write=True),
            (stamp_us, ttl, body, site_id, session_id),
        )
    return Timeline(body, "rows")


def _closed(summary: dict) -> bool:
    """No event can extend the session any more (late ones still may, and invalidate)."""
    return summary["last_seen_at"] < datetime.now(UTC) - settings.SESSION_INACTIVITY


def _ttl(summary: dict | None, state: selectors.TimelineState) -> int:
    """Seconds the copy may live: not past the last insert, nor the session's events."""
    if summary is None or state.touched_ttl is None:
        return 0
    age = (datetime.now(UTC) - buckets.as_utc(summary["started_at"])).total_seconds()
    return int(min(state.touched_ttl, retention.ttl_seconds(retention.RAW_EVENTS) - age))
