"""Hot partitions (shards per hour): shard counts follow the observed rate and every hour keeps
the shards it was written with, so changing the count never loses or doubles a read."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.aggregates import seal, sources
from sessions_app.domain.aggregates.report import site_report
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger.shards import event_shards_adjust
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import AdminAction, BucketState, Site
from tests.support.events import event
from tests.support.sealing import bucket_aggregate

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


def _record(site: Site, hour, n: int, tag: str) -> None:
    for i in range(n):
        ts = hour + timedelta(minutes=1, seconds=i)
        events_record(
            source=Source(site=site, received_at=ts + timedelta(seconds=2)),
            raw_events=[event(ts, anon=f"{tag}-{i % 3}", id=f"{tag}-{i}")],
        )


def _resize(site: Site, shards: int) -> Site:
    Site.objects.filter(pk=site.pk).update(event_shards=shards)
    site.refresh_from_db()
    return site


def test_changing_the_shard_count_mid_hour_never_loses_a_read(site):
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    _record(site, hour, 5, "one")  # 1 shard
    _record(_resize(site, 4), hour, 24, "four")  # then 4
    _record(_resize(site, 2), hour, 5, "two")  # then back to 2
    state = BucketState.objects.get(site=site, granularity="hour", bucket=hour)
    assert state.shards == 4  # raised by the 4-shard writes, not lowered by the 2-shard ones
    rows = list(sources.site_bucket_rows(site_id=site.id, hour=hour, shards=state.shards))
    assert len(rows) == 34
    assert len(list(sources.site_bucket_rows(site_id=site.id, hour=hour, shards=2))) < 34

    report = site_report(
        site_id=site.id, shards=site.event_shards, start=hour, end=hour + timedelta(hours=1)
    )
    assert report["buckets"][0].aggregates.events == 34  # live: read all 4 shards
    seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    aggregate = bucket_aggregate(site_id=site.id, granularity="hour", bucket=hour)
    assert aggregate["events"] == aggregate["rows_read"] == 34


def test_the_shard_count_follows_the_busiest_recent_hour(site, settings):
    # 10 events in the busiest hour, 20 MB rows (to keep the test small), 2x headroom:
    # 10 / 3600 * 2 events/s * 3600 s * 20 MB = 400 MB an hour -> 4 shards of 100 MB.
    settings.SITE_EVENT_ROW_BYTES = 20_000_000
    now = timezone.now().replace(microsecond=0)
    _record(site, timebuckets.floor(now - timedelta(hours=2), "hour"), 10, "busy")
    _record(site, timebuckets.floor(now - timedelta(hours=5), "hour"), 3, "calm")
    assert event_shards_adjust(now=now) == {str(site.id): (1, 4)}
    site.refresh_from_db()
    assert site.event_shards == 4
    audit = AdminAction.objects.get(action="site.shards")
    assert audit.actor_name == "system" and audit.details["peak_hour_events"] == 10
    assert event_shards_adjust(now=now) == {}  # already right: no change, no entry
    assert AdminAction.objects.filter(action="site.shards").count() == 1
