"""Series storage in the base + delta layout, and days/months rolled up from sealed buckets."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.aggregates import seal, series
from sessions_app.domain.aggregates.states import buckets_due
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.models import BucketState
from tests.support.events import event
from tests.support.sealing import bucket_aggregate

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

SEED_TAGS = {
    "site": "gew",
    "what": "cpu-idle-percentage",
    "system-component": "cpu",
    "cpu-type": "idle",
    "unit": "%",
}


def test_base_delta_worked_numbers():
    assert series.SERIES_PERIOD_MS == 4294967296
    assert series.series_base(1300000000000) == 1297080123392
    assert 1300000000000 - series.series_base(1300000000000) == 2919876608
    assert series.series_base(1300001000000) == 1297080123392
    assert 1300001000000 - series.series_base(1300001000000) == 2920876608
    assert series.series_key("system", SEED_TAGS) == (
        "system,cpu-type=idle,site=gew,system-component=cpu,unit=%,what=cpu-idle-percentage"
    )


def test_base_delta_points_round_trip(site):
    key = series.series_key("system", {**SEED_TAGS, "site": f"gew-{site.id}"})
    first = timebuckets.EPOCH + timedelta(milliseconds=1300000000000)
    second = timebuckets.EPOCH + timedelta(milliseconds=1300001000000)
    series.points_write([(key, first, 42.0), (key, second, 84.0)], ttl=3600)
    assert series.point_location(first) == (1297080123392, 2919876608)
    assert series.points_read(key, first, second + timedelta(milliseconds=1)) == [
        (first, 42.0),
        (second, 84.0),
    ]


def test_reads_cross_base_periods(site):
    key = series.series_key("events", {"site": str(site.id), "resolution": "test"})
    boundary = timebuckets.EPOCH + timedelta(
        milliseconds=series.series_base(1300000000000) + series.SERIES_PERIOD_MS
    )
    points = [
        (key, boundary - timedelta(hours=1), 1.0),
        (key, boundary, 2.0),
        (key, boundary + timedelta(days=60), 3.0),
    ]
    series.points_write(points, ttl=3600)
    got = series.points_read(key, boundary - timedelta(days=1), boundary + timedelta(days=61))
    assert got == [(ts, v) for _, ts, v in points]
    assert series.points_read(key, boundary, boundary + timedelta(days=1)) == [(boundary, 2.0)]


def test_series_keys_refuse_separators():
    with pytest.raises(ValueError, match="cannot contain"):
        series.series_key("a,b", {})


def test_days_roll_up_from_sealed_hours_only(site):
    now = timezone.now().replace(microsecond=0)
    day = timebuckets.floor(now - timedelta(days=2), "day")
    for hour_offset, n in ((3, 2), (15, 3)):
        t = day + timedelta(hours=hour_offset, minutes=5)
        events_record(
            source=Source(site=site, received_at=t + timedelta(minutes=1)),
            raw_events=[event(t + timedelta(seconds=i), anon=f"u{hour_offset}") for i in range(n)],
        )
    due = buckets_due(now=now)
    assert (site.id, "day", day) not in due  # not before its hours are sealed
    for site_id, granularity, start in due:
        if site_id == site.id and granularity == "hour":
            seal.bucket_seal(site_id=site_id, hour=start, now=now)
    assert (site.id, "day", day) in buckets_due(now=now)
    assert seal.bucket_rollup(site_id=site.id, granularity="day", bucket=day, now=now)
    key = series.series_key("events", {"resolution": "day", "site": str(site.id)})
    assert series.points_read(key, day, day + timedelta(days=1)) == [(day, 5.0)]
    # Idempotent: rolling up again writes the same value, never a sum of sums.
    seal.bucket_rollup(site_id=site.id, granularity="day", bucket=day, now=now)
    assert series.points_read(key, day, day + timedelta(days=1)) == [(day, 5.0)]
    pageviews = series.series_key(
        "events", {"resolution": "day", "site": str(site.id), "type": "pageview"}
    )
    assert series.points_read(pageviews, day, day + timedelta(days=1)) == [(day, 5.0)]
    # The day's aggregate row: counts summed, unique users from the hours' sketches.
    aggregate = bucket_aggregate(site_id=site.id, granularity="day", bucket=day)
    assert aggregate["events"] == 5 and aggregate["users"] == 2
    assert aggregate["top_pages"] == [("/", 5)]
    month = BucketState.objects.get(
        site=site, granularity="month", bucket=timebuckets.floor(day, "month")
    )
    assert month.state == BucketState.OPEN

    # A late event reopens the hour and the day built from it.
    events_record(
        source=Source(site=site, received_at=now),
        raw_events=[event(day + timedelta(hours=3, minutes=30), anon="late")],
    )
    states = {
        s.granularity: s.state
        for s in BucketState.objects.filter(site=site, bucket__in=[day + timedelta(hours=3), day])
    }
    assert states == {"hour": BucketState.REOPENED, "day": BucketState.REOPENED}
