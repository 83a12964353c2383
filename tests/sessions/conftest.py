"""Fixtures of the session read tests."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core import timebuckets
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
