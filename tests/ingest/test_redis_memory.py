"""Redis memory per accepted event is bounded: one dedup mark for DEDUP_TTL, a stated
size (README, Operations); and the local Redis never evicts a queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.coordination import DEDUP_PREFIX
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core.redis_client import redis_client
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

# Bytes of Redis memory one accepted event holds for DEDUP_TTL (its dedup mark, with a
# 36-character client id); the README (Operations) states it.
BYTES_PER_EVENT = 160


def test_an_accepted_event_holds_a_bounded_dedup_mark(site):
    redis = redis_client()
    before = set(redis.scan_iter(f"{DEDUP_PREFIX}:*"))
    at = timezone.now() - timedelta(minutes=1)
    events = [event(at, anon="mem", id=f"{i:08d}-aaaa-4bbb-8ccc-dddddddddddd") for i in range(200)]
    assert events_record(source=Source(site=site, received_at=timezone.now()), raw_events=events)
    marks = set(redis.scan_iter(f"{DEDUP_PREFIX}:*")) - before
    assert len(marks) == 200
    used = sum(redis.memory_usage(k) for k in marks)
    print(f"dedup marks: {used / 200:.1f} bytes per event")
    assert used / 200 <= BYTES_PER_EVENT
    assert all(redis.ttl(k) > 0 for k in marks)  # every mark expires


def test_redis_evicts_only_keys_that_expire():
    config = redis_client().config_get("maxmemory*")
    assert int(config["maxmemory"]) > 0
    assert config["maxmemory-policy"] == "volatile-lru"
