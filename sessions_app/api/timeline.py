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

An open session keeps changing, but only at its end: an event inserted older than
TIMELINE_PREFIX_LAG / 2 (late, replayed) also writes the static `backfilled` cell.
A read of an open session stores the JSON of its events older than the lag before
the read (stamped like the copy) as `prefix`, with the last one's id; later reads
serve the prefix followed by the rows after that id and the session's current
summary, while the prefix's write time is later than backfilled's, and extend it
once TIMELINE_PREFIX_MIN_EVENTS more events have aged past the lag. An event
missing from a prefix was written after its stamp; it is either newer than the
prefix's end (a row after it) or was more than half the lag old when sent, so it
marked the partition.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings

from sessions_app import buckets, retention, selectors
from sessions_app.cassandra import prepare, session
from sessions_app.jsonfmt import dumps

STORE = """
UPDATE {ks}.session_events USING TIMESTAMP ? AND TTL ?
SET timeline = ?, timeline_site = ? WHERE session_id = ?
"""
STORE_PREFIX = """
UPDATE {ks}.session_events USING TIMESTAMP ? AND TTL ?
SET prefix = ?, prefix_upto = ?, prefix_count = ?, prefix_user = ?, timeline_site = ?
WHERE session_id = ?
"""


@dataclass(frozen=True)
class Timeline:
    body: bytes  # {"session": summary, "events": [...]}
    source: str  # "materialized", "prefix" (+ the rows after it) or "rows"


def session_timeline(*, site_id: uuid.UUID, session_id: uuid.UUID) -> Timeline | None:
    """Return a session's timeline JSON, or None when the site has no such session."""
    # Whatever this request stores is stamped before its first read (the probe): a
    # write it did not see, the probe's backfilled cell included, is stamped later.
    stamp_us = time.time_ns() // 1000 - _us(settings.TIMELINE_MATERIALIZE_MARGIN)
    state = selectors.timeline_state(session_id=session_id)
    if state is None:
        return None
    if state.current and state.site_id == site_id and state.body is not None:
        return Timeline(state.body, "materialized")
    prefix = state.prefix if state.prefix_current and state.site_id == site_id else None
    if prefix is not None and settings.TIMELINE_MATERIALIZE:
        user_key, source = prefix.user_key, "prefix"
        docs, summary = selectors.session_tail(
            site_id=site_id,
            user_key=user_key,
            session_id=session_id,
            after=prefix.upto,
            limit=max(0, selectors.MAX_PAGE - prefix.count),
        )
    else:
        # The probe read the first event's user key: the rows and the summary are
        # read at once, as for a prefix.
        prefix = None
        if state.first_user is None or state.first_site != site_id:
            return None
        user_key, source = state.first_user, "rows"
        docs, summary = selectors.session_tail(
            site_id=site_id,
            user_key=user_key,
            session_id=session_id,
            after=None,
            limit=selectors.MAX_PAGE,
        )
        if not docs:
            return None
    body = _body(summary, prefix, docs)
    ttl = _ttl(summary, state)
    if not settings.TIMELINE_MATERIALIZE or summary is None or ttl <= 0:
        return Timeline(body, source)
    if _closed(summary):
        if state.touched_us is not None and state.touched_us < stamp_us:
            session().execute(
                prepare(STORE, idempotent=True, write=True),
                (stamp_us, ttl, body, site_id, session_id),
            )
    elif state.backfilled_us is None or state.backfilled_us < stamp_us:
        _prefix_extend(site_id, session_id, user_key, prefix, docs, stamp_us, ttl)
    return Timeline(body, source)


def _body(summary: dict | None, prefix: selectors.Prefix | None, docs: list[bytes]) -> bytes:
    """The timeline's JSON: what dumps({"session": summary, "events": all events}) writes."""
    rest = b",".join(docs)
    if prefix is not None and prefix.events:
        rest = prefix.events + b"," + rest if rest else prefix.events
    return b'{"session":' + dumps(summary) + b',"events":[' + rest + b"]}"


def _prefix_extend(
    site_id: uuid.UUID,
    session_id: uuid.UUID,
    user_key: str,
    prefix: selectors.Prefix | None,
    docs: list[bytes],
    stamp_us: int,
    ttl: int,
) -> None:
    """Store the prefix grown by the events read that are older than the lag, if enough."""
    cutoff = datetime.fromtimestamp(stamp_us / 1e6, UTC) - settings.TIMELINE_PREFIX_LAG
    aged = 0
    while aged < len(docs) and selectors.doc_time(docs[aged]) < cutoff:
        aged += 1
    if aged < settings.TIMELINE_PREFIX_MIN_EVENTS:
        return
    fragment = b",".join(docs[:aged])
    if prefix is not None and prefix.events:
        fragment = prefix.events + b"," + fragment
    count = aged + (prefix.count if prefix is not None else 0)
    session().execute(
        prepare(STORE_PREFIX, idempotent=True, write=True),
        (
            stamp_us,
            ttl,
            fragment,
            selectors.event_from_doc(docs[aged - 1])["event_id"],
            count,
            user_key,
            site_id,
            session_id,
        ),
    )


def _us(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1e6)


def _closed(summary: dict) -> bool:
    """No event can extend the session any more (late ones still may, and invalidate)."""
    return summary["last_seen_at"] < datetime.now(UTC) - settings.SESSION_INACTIVITY


def _ttl(summary: dict | None, state: selectors.TimelineState) -> int:
    """Seconds a copy may live: not past the last insert, nor the session's events."""
    if summary is None or state.touched_ttl is None:
        return 0
    age = (datetime.now(UTC) - buckets.as_utc(summary["started_at"])).total_seconds()
    return int(min(state.touched_ttl, retention.ttl_seconds(retention.RAW_EVENTS) - age))
