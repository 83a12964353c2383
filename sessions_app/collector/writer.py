"""The only code that writes event rows to Cassandra.

Rows go out as prepared, idempotent statements executed concurrently; every
value is bound, never formatted into CQL.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cassandra.concurrent import execute_concurrent_with_args
from django.conf import settings

from sessions_app import buckets
from sessions_app.cassandra import prepare, session

CONCURRENCY = 64

INSERT_SESSION_EVENT = """
INSERT INTO {ks}.session_events
  (session_id, event_id, site_id, user_key, type, name, ts, url, referrer, title,
   element, props, late)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_USER_EVENT = """
INSERT INTO {ks}.user_events_by_bucket
  (site_id, user_key, bucket, event_id, session_id, type, name, ts, url, element, props)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
UPSERT_USER_SESSION = """
INSERT INTO {ks}.user_sessions
  (site_id, user_key, session_id, started_at, last_seen_at, anonymous_id, user_id,
   event_count, pageview_count, click_count, entry_url, exit_url, converted, is_bot,
   user_agent, ip_prefix)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


@dataclass(frozen=True)
class EventRow:
    """One validated, sessionized event ready to be written."""

    site_id: uuid.UUID
    user_key: str
    session_id: uuid.UUID
    event_id: uuid.UUID
    type: str
    ts: datetime
    name: str | None = None
    url: str | None = None
    referrer: str | None = None
    title: str | None = None
    element: dict[str, Any] | None = None
    props: dict[str, Any] | None = None
    late: bool = False


@dataclass
class SessionSummary:
    """The user_sessions row of one session (overwritten whole on every update)."""

    site_id: uuid.UUID
    user_key: str
    session_id: uuid.UUID
    started_at: datetime
    last_seen_at: datetime
    anonymous_id: str | None = None
    user_id: str | None = None
    event_count: int = 0
    pageview_count: int = 0
    click_count: int = 0
    entry_url: str | None = None
    exit_url: str | None = None
    converted: bool = False
    is_bot: bool = False
    user_agent: str | None = None
    ip_prefix: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)


def events_write(events: Sequence[EventRow]) -> int:
    """Write events to session_events and user_events_by_bucket; return rows written."""
    if not events:
        return 0
    width = buckets.parse_width(settings.USER_EVENTS_BUCKET)
    by_session = prepare(INSERT_SESSION_EVENT, idempotent=True, write=True)
    by_bucket = prepare(INSERT_USER_EVENT, idempotent=True, write=True)
    session_rows = []
    bucket_rows = []
    for event in events:
        ts = buckets.as_utc(event.ts)
        element, props = _json(event.element), _json(event.props)
        session_rows.append(
            (
                event.session_id,
                event.event_id,
                event.site_id,
                event.user_key,
                event.type,
                event.name,
                ts,
                event.url,
                event.referrer,
                event.title,
                element,
                props,
                event.late,
            )
        )
        bucket_rows.append(
            (
                event.site_id,
                event.user_key,
                buckets.floor(ts, width),
                event.event_id,
                event.session_id,
                event.type,
                event.name,
                ts,
                event.url,
                element,
                props,
            )
        )
    _execute(by_session, session_rows)
    _execute(by_bucket, bucket_rows)
    return len(session_rows) + len(bucket_rows)


def sessions_write(summaries: Iterable[SessionSummary]) -> int:
    """Overwrite user_sessions rows with the given summaries; return rows written."""
    statement = prepare(UPSERT_USER_SESSION, idempotent=True, write=True)
    rows = [
        (
            s.site_id,
            s.user_key,
            s.session_id,
            buckets.as_utc(s.started_at),
            buckets.as_utc(s.last_seen_at),
            s.anonymous_id,
            s.user_id,
            s.event_count,
            s.pageview_count,
            s.click_count,
            s.entry_url,
            s.exit_url,
            s.converted,
            s.is_bot,
            s.user_agent,
            s.ip_prefix,
        )
        for s in summaries
    ]
    _execute(statement, rows)
    return len(rows)


def _execute(statement: Any, rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    results = execute_concurrent_with_args(
        session(), statement, rows, concurrency=CONCURRENCY, raise_on_first_error=True
    )
    del results
