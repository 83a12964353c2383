"""Fixtures of the aggregate tests: a busy hour on three shards, and sealing it one way."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import Site
from tests.support.conversion import purchase_goal
from tests.support.events import event


@pytest.fixture
def busy_hour(site):
    """Three hours ago, on three shards: visits in several beacons, a bot, one beacon
    that straddles into the next hour."""
    Site.objects.filter(pk=site.pk).update(event_shards=3)
    site.refresh_from_db()
    purchase_goal(site)
    hour = timebuckets.floor(timezone.now() - timedelta(hours=3), "hour")
    received = hour + timedelta(minutes=59, seconds=50)
    t = hour + timedelta(minutes=2)
    for visitor in range(4):
        anon = f"v{visitor}"
        for beacon in range(3):
            start = t + timedelta(minutes=visitor * 7 + beacon * 2)
            events_record(
                source=Source(site=site, received_at=received),
                raw_events=[
                    event(start, anon=anon, url=f"https://shop.example/p{beacon}?x={visitor}"),
                    event(
                        start + timedelta(seconds=20),
                        kind="click",
                        anon=anon,
                        element={"tag": "button", "text": f"b{beacon}", "selector": "#buy"},
                    ),
                    event(
                        start + timedelta(seconds=40),
                        kind="custom",
                        anon=anon,
                        name="purchase" if visitor == 1 else "signup",
                    ),
                ],
            )
    events_record(
        source=Source(site=site, received_at=received, user_agent="Googlebot/2.1"),
        raw_events=[event(t, anon="bot"), event(t + timedelta(seconds=5), anon="bot")],
    )
    # The last minute of the hour and the first of the next, in one beacon.
    events_record(
        source=Source(site=site, received_at=hour + timedelta(minutes=61)),
        raw_events=[
            event(hour + timedelta(minutes=59, seconds=30), anon="v0"),
            event(hour + timedelta(minutes=60, seconds=10), anon="v0", kind="click"),
        ],
    )
    return hour
