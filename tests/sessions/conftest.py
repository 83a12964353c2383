"""Fixtures of the session read tests."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.core import timebuckets
from sessions_app.ingest.pipeline import Source, events_record
from tests.support.events import event


@pytest.fixture
def history(site):
    """Thirty events of one user over six days, several per day, around midnights."""
    now = timezone.now().replace(microsecond=0)
    day = timebuckets.floor(now, "day")
    times = []
    for d in range(6, 0, -1):
        for minutes in (-7, -1, 0, 3, 200):  # around each midnight
            times.append(day - timedelta(days=d) + timedelta(minutes=minutes))
    batches: dict = {}
    for n, ts in enumerate(times):
        batches.setdefault(ts.date(), []).append(event(ts, anon="hist", id=f"h{n}"))
    for batch in batches.values():
        events_record(source=Source(site=site, received_at=now), raw_events=batch)
    return sorted(times), now


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
