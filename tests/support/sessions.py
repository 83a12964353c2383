"""Session reads: one session recorded through the pipeline, its timeline read through
the API, its events as stored."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core.bounds import MAX_PAGE
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.eventdoc import event_from_doc
from sessions_app.foundation.tables.session_events import SELECT_DOCS
from tests.support.events import event


def record_session(site, start, anon: str, count: int, *, prefix: str = "t", step: float = 10):
    """Record a session of count events from start, step seconds apart (odd ones clicks)."""
    events_record(
        source=Source(site=site, received_at=timezone.now()),
        raw_events=[
            event(
                start + timedelta(seconds=step * i),
                anon=anon,
                id=f"{prefix}{i}",
                **({"type": "click", "element": {"tag": "a", "text": "Go"}} if i % 2 else {}),
            )
            for i in range(count)
        ],
    )


def timeline_get(client, site, session_id, token):
    """GET a session's timeline through the API."""
    return client.get(
        f"/api/sites/{site.id}/sessions/{session_id}/events", HTTP_AUTHORIZATION=f"Token {token}"
    )


def stored_events(*, session_id: uuid.UUID, limit: int = MAX_PAGE) -> list[dict[str, Any]]:
    """Return a session's events as stored, in time order (none for an id of another kind)."""
    if session_id.version != 1:
        return []
    rows = cassandra_session().execute(prepare(SELECT_DOCS), (session_id, limit))
    return [event_from_doc(row["doc"]) for row in rows]
