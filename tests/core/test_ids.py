"""Deterministic event TimeUUIDs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sessions_app.foundation.core.ids import event_uuid, time_uuid_bound, uuid_time

SITE = uuid.UUID("00000000-0000-4000-8000-000000000001")
TS = datetime(2026, 3, 14, 15, 9, 26, 535_897, tzinfo=UTC)


def test_same_client_event_maps_to_same_uuid() -> None:
    a = event_uuid(site_id=SITE, client_event_id="e-1", ts=TS)
    assert a == event_uuid(site_id=SITE, client_event_id="e-1", ts=TS)
    assert a.version == 1


def test_different_ids_or_sites_differ() -> None:
    a = event_uuid(site_id=SITE, client_event_id="e-1", ts=TS)
    assert a != event_uuid(site_id=SITE, client_event_id="e-2", ts=TS)
    assert a != event_uuid(site_id=uuid.uuid4(), client_event_id="e-1", ts=TS)


def test_time_round_trips_to_the_microsecond() -> None:
    assert uuid_time(event_uuid(site_id=SITE, client_event_id="x", ts=TS)) == TS


def test_bounds_enclose_every_uuid_of_that_instant() -> None:
    low, high = time_uuid_bound(TS), time_uuid_bound(TS, upper=True)
    assert uuid_time(low) == uuid_time(high) == TS
    later = time_uuid_bound(TS + timedelta(microseconds=1))
    assert uuid_time(later) > uuid_time(high)
