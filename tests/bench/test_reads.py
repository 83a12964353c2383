"""The activity benchmark reads the same events every way, the raw driver included.

Its raw-driver figures are the ceiling the selector's ratio is judged against: they
must read the selector's buckets with the selector's statements, or the comparison
says nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core import timebuckets
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def test_every_strategy_and_the_raw_driver_read_the_same_events(site, settings, monkeypatch):
    monkeypatch.setenv("ACTIVITY_IN_MAX_BUCKETS", "4")  # bench.reads sets it on import
    from bench import reads

    settings.ACTIVITY_IN_MAX_BUCKETS = 31
    settings.ACTIVITY_PARALLEL_IN_BUCKETS = 3
    now = timezone.now().replace(microsecond=0)
    day = timebuckets.floor(now, "day")
    for d in range(1, 7):  # three events on each of six days
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[
                event(day - timedelta(days=d, hours=-i), anon="walker", id=f"w{d}-{i}")
                for i in range(3)
            ],
        )

    measured = reads.activity(site, "walker", now, rounds=1)

    assert set(measured) == {"parallel", "sequential", "in", "raw_parallel", "raw_sequential"}
    assert {name: m["events"] for name, m in measured.items()} == dict.fromkeys(measured, 18)
    sequential = measured["sequential"]["queries"]
    assert sequential == measured["raw_sequential"]["queries"] == measured["sequential"]["buckets"]
    assert measured["raw_parallel"]["queries"] == measured["parallel"]["queries"]
    assert measured["parallel"]["queries"] == -(-sequential // 3)
    assert measured["in"]["queries"] == 1
    assert all(m["p50_ms"] > 0 and m["app_cpu_ms"] >= 0 for m in measured.values())
