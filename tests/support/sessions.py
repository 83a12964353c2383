"""Session reads: one session recorded through the pipeline, its timeline read through
the API."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from sessions_app.ingest.pipeline import Source, events_record
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
