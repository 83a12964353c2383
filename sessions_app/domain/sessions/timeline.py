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
from typing import Any

import orjson
from django.conf import settings

from sessions_app.domain.ledger import policies
from sessions_app.domain.sessions.timeline_store import Prefix, prefix_extend, timeline_store
from sessions_app.foundation.core import bounds, timebuckets
from sessions_app.foundation.core.bounds import bounded_limit
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.eventdoc import event_typed
from sessions_app.foundation.core.jsonfmt import dumps
from sessions_app.foundation.tables import retention_specs
from sessions_app.foundation.tables import session_events as session_events_table
from sessions_app.foundation.tables.user_sessions import (
    SELECT_SESSION_ONE,
    session_row,
    with_dimensions,
)


@dataclass(frozen=True)
class TimelineState:
    """A session partition's static cells: its materialized timeline and last write."""

    body: bytes | None
    site_id: uuid.UUID | None
    built_us: int | None  # write time of the materialized copy (µs since the epoch)
    touched_us: int | None  # write time of the partition's last event insert
    touched_ttl: int | None  # seconds that last insert has left
    prefix: Prefix | None = None
    prefix_us: int | None = None  # write time of the prefix
    backfilled_us: int | None = None  # write time of the last insert of an old event
    first_user: str | None = None  # the first event's user key (None: no event rows)
    first_site: uuid.UUID | None = None  # the first event's site (a session has one)

    @property
    def current(self) -> bool:
        """The copy was stamped after the partition's last write, so it holds every event."""
        return (
            self.body is not None
            and self.built_us is not None
            and self.touched_us is not None
            and self.built_us > self.touched_us
        )

    @property
    def prefix_current(self) -> bool:
        """The prefix was stamped after the last insert that could sort inside it."""
        return (
            self.prefix is not None
            and self.prefix_us is not None
            and (self.backfilled_us is None or self.prefix_us > self.backfilled_us)
        )


def timeline_state(*, session_id: uuid.UUID) -> TimelineState | None:
    """Return a session partition's static cells (None when there is no partition)."""
    if session_id.version != 1:
        return None
    row = (
        cassandra_session()
        .execute(prepare(session_events_table.SELECT_STATIC), (session_id,))
        .one()
    )
    if row is None:
        return None
    prefix = None
    if row["prefix"] is not None and row["prefix_upto"] is not None and row["prefix_user"]:
        prefix = Prefix(
            events=row["prefix"],
            upto=row["prefix_upto"],
            count=row["prefix_count"] or 0,
            user_key=row["prefix_user"],
        )
    return TimelineState(
        body=row["timeline"],
        site_id=row["timeline_site"],
        built_us=row["built_us"],
        touched_us=row["touched_us"],
        touched_ttl=row["touched_ttl"],
        prefix=prefix,
        prefix_us=row["prefix_us"],
        backfilled_us=row["backfilled_us"],
        first_user=row["first_user"],
        first_site=row["first_site"],
    )


def session_tail(
    *,
    site_id: uuid.UUID,
    user_key: str,
    session_id: uuid.UUID,
    after: uuid.UUID | None,
    limit: int,
) -> tuple[list[bytes], dict[str, Any] | None]:
    """Return the documents of a session's events after `after` (all for None; at most
    limit, none for 0) and its summary.

    The two reads run concurrently: what a timeline read from its rows (after None)
    or from a materialized prefix (after its last event) needs. The caller has
    checked the partition's site (a session's id hashes its site's).
    """
    if session_id.version != 1:
        return [], None
    db = cassandra_session()
    summary = db.execute_async(
        prepare(with_dimensions(SELECT_SESSION_ONE)), (site_id, user_key, session_id)
    )
    docs: list[bytes] = []
    if limit:
        if after is None:
            params: tuple[Any, ...] = (session_id, bounded_limit(limit))
            statement = session_events_table.SELECT_DOCS
        else:
            params = (session_id, after, bounded_limit(limit))
            statement = session_events_table.SELECT_DOCS_AFTER
        docs = [row["doc"] for row in db.execute_async(prepare(statement), params).result()]
    row = summary.result().one()
    return docs, session_row(row) if row else None


@dataclass(frozen=True)
class Timeline:
    """A session's timeline: the API's JSON body, and where it came from.

    The API serves `body` as it is; the analyst page and the exports decode it
    (`summary`, `events`), so all three show the same events.
    """

    body: bytes  # {"session": summary, "events": [...]}
    source: str  # "materialized", "prefix" (+ the rows after it) or "rows"

    def decoded(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Return the session's summary and its events with UUIDs and datetimes."""
        data = orjson.loads(self.body)
        summary = data["session"]
        if summary is not None:
            summary["session_id"] = uuid.UUID(summary["session_id"])
            for key in ("started_at", "last_seen_at"):
                summary[key] = datetime.fromisoformat(summary[key])
        return summary, [event_typed(e) for e in data["events"]]


def session_timeline(*, site_id: uuid.UUID, session_id: uuid.UUID) -> Timeline | None:
    """Return a session's timeline JSON, or None when the site has no such session."""
    # Whatever this request stores is stamped before its first read (the probe): a
    # write it did not see, the probe's backfilled cell included, is stamped later.
    stamp_us = time.time_ns() // 1000 - _us(settings.TIMELINE_MATERIALIZE_MARGIN)
    state = timeline_state(session_id=session_id)
    if state is None:
        return None
    if state.current and state.site_id == site_id and state.body is not None:
        return Timeline(state.body, "materialized")
    prefix = state.prefix if state.prefix_current and state.site_id == site_id else None
    if prefix is not None and settings.TIMELINE_MATERIALIZE:
        user_key, source = prefix.user_key, "prefix"
        docs, summary = session_tail(
            site_id=site_id,
            user_key=user_key,
            session_id=session_id,
            after=prefix.upto,
            limit=max(0, bounds.MAX_PAGE - prefix.count),
        )
    else:
        # The probe read the first event's user key: the rows and the summary are
        # read at once, as for a prefix.
        prefix = None
        if state.first_user is None or state.first_site != site_id:
            return None
        user_key, source = state.first_user, "rows"
        docs, summary = session_tail(
            site_id=site_id,
            user_key=user_key,
            session_id=session_id,
            after=None,
            limit=bounds.MAX_PAGE,
        )
        if not docs:
            return None
    body = _body(summary, prefix, docs)
    ttl = _ttl(summary, state)
    if not settings.TIMELINE_MATERIALIZE or summary is None or ttl <= 0:
        return Timeline(body, source)
    if _closed(summary):
        if state.touched_us is not None and state.touched_us < stamp_us:
            timeline_store(site_id, session_id, body, stamp_us, ttl)
    elif state.backfilled_us is None or state.backfilled_us < stamp_us:
        prefix_extend(site_id, session_id, user_key, prefix, docs, stamp_us, ttl)
    return Timeline(body, source)


def _body(summary: dict | None, prefix: Prefix | None, docs: list[bytes]) -> bytes:
    """The timeline's JSON: what dumps({"session": summary, "events": all events}) writes."""
    rest = b",".join(docs)
    if prefix is not None and prefix.events:
        rest = prefix.events + b"," + rest if rest else prefix.events
    return b'{"session":' + dumps(summary) + b',"events":[' + rest + b"]}"


def _us(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1e6)


def _closed(summary: dict) -> bool:
    """No event can extend the session any more (late ones still may, and invalidate)."""
    return summary["last_seen_at"] < datetime.now(UTC) - settings.SESSION_INACTIVITY


def _ttl(summary: dict | None, state: TimelineState) -> int:
    """Seconds a copy may live: not past the last insert, nor the session's events."""
    if summary is None or state.touched_ttl is None:
        return 0
    age = (datetime.now(UTC) - timebuckets.as_utc(summary["started_at"])).total_seconds()
    return int(min(state.touched_ttl, policies.ttl_seconds(retention_specs.RAW_EVENTS) - age))
