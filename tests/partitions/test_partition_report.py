"""The partition-size report on the real node, fed through the collector's write path."""

from __future__ import annotations

import uuid
import zlib
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.test import override_settings

from sessions_app.domain.aggregates import seal, sources, stored
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import sizing
from sessions_app.domain.ledger.sizing import Verdict
from sessions_app.domain.partitions import counting, partition_report, probes
from sessions_app.domain.partitions.estimates import (
    MAX_WINDOW_HOURS,
    TableEstimate,
    estimates_combine,
    ingest_hours,
    mean_row_bytes,
    size_estimates,
    value_bytes,
)
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.timebuckets import Width
from sessions_app.foundation.models import CASSANDRA_MODELS
from tests.support.clock import FIXED_NOW
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

HOUR = timebuckets.floor(FIXED_NOW, Width.HOUR)  # 15:00; FIXED_NOW is 15:09:26
LONG_URL = "https://shop.example/" + "p" * 300


def record(site, events, *, at=FIXED_NOW):
    return events_record(source=Source(site=site, received_at=at), raw_events=events)


def visits(site):
    """Write 40 events of `heavy` (one session), 5 of `light` and one rejected event."""
    heavy = [event(HOUR + timedelta(seconds=10 * i), anon="heavy", url=LONG_URL) for i in range(40)]
    light = [event(HOUR + timedelta(minutes=1, seconds=i), anon="light") for i in range(5)]
    assert record(site, heavy[:20]).accepted == 20
    assert record(site, heavy[20:] + light).accepted == 25
    outcome = record(site, [{"id": "bad", "type": "teleport", "ts": HOUR.isoformat()}])
    assert len(outcome.rejected) == 1


def by_table(report: partition_report.PartitionReport) -> dict[str, counting.TableSize]:
    return {t.table: t for t in report.tables}


def test_report_counts_what_the_collector_wrote(site):
    visits(site)
    report = partition_report.partition_report(
        site_id=site.id, event_shards=site.event_shards, now=FIXED_NOW, hours=24
    )
    assert report.start == HOUR + timedelta(hours=1) - timedelta(hours=24)
    assert report.peak is not None
    assert (report.peak.hour, report.peak.accepted, report.peak.requests) == (HOUR, 45, 3)
    assert report.peak.rejected == 1
    tables = by_table(report)
    # Every table the registry sizes, in its order (the site-events probe comes first).
    assert list(tables) == [
        "site_events_by_bucket",
        "user_events_by_bucket",
        "session_events",
        "replay_chunks",
        "latest_sessions",
        "site_sessions",
        "failed_events",
        "transaction_log",
        "bucket_users",
        "ingest_stats",
    ]
    assert tables["bucket_users"].largest.rows == 0  # the hour is not sealed yet

    site_events = tables["site_events_by_bucket"]
    assert site_events.largest == counting.Counted(
        key="bucket=2026-03-14 15:00, shard=0", rows=45, capped=False
    )
    assert site_events.row_bytes_measured and site_events.row_bytes > 16 + 16 + 8 + 100
    assert site_events.writes_per_second == pytest.approx(45 / 3600)
    # Every event arrived in the peak hour: the formula and the count agree.
    assert site_events.estimate_bytes == pytest.approx(site_events.observed_bytes)
    assert site_events.recommendation == sizing.recommend_width(
        writes_per_second=45 / 3600, row_bytes=site_events.row_bytes
    )
    assert "needs 1 shard(s); the site has 1" in site_events.note

    user_events = tables["user_events_by_bucket"]
    assert user_events.width is Width(settings.USER_EVENTS_BUCKET)
    assert user_events.largest is not None and user_events.largest.key.startswith("user_key=heavy")
    assert user_events.largest.rows == 40 and user_events.partitions_counted == 2  # heavy, light
    # The heavy user's rows carry the 321-character URL; the mean row says so.
    assert user_events.row_bytes > len(LONG_URL)
    assert user_events.writes_per_second == pytest.approx(40 / 3600)
    assert user_events.estimate_bytes == pytest.approx(
        40
        / 3600
        * timebuckets.nominal_duration(user_events.width).total_seconds()
        * user_events.row_bytes
    )

    session_events = tables["session_events"]
    assert session_events.largest is not None and session_events.largest.rows == 40
    assert session_events.width is None and session_events.recommendation is None

    ingest = tables["ingest_stats"]
    assert ingest.largest is not None and ingest.largest.rows == 3
    log = tables["transaction_log"]
    assert log.partitions_counted == 6 * settings.TXLOG_SHARDS
    assert log.largest is not None and 1 <= log.largest.rows <= 2  # two requests accepted events
    failed = tables["failed_events"]
    assert failed.largest is not None and failed.largest.rows == 1
    assert failed.writes_per_second == pytest.approx(1 / 3600)
    feed = tables["latest_sessions"]
    assert feed.partitions_counted == settings.FEED_SHARDS
    explorer = tables["site_sessions"]  # the visits' sessions, in the peak hour's day
    assert explorer.partitions_counted == settings.SESSION_SHARDS
    assert explorer.largest is not None and explorer.largest.rows >= 1
    assert explorer.row_bytes_measured and explorer.width is Width.DAY

    # A shop this small is far below the floor everywhere: every size is flagged.
    for table in report.tables:
        assert table.estimate_verdict is Verdict.TOO_SMALL, table.table
        assert table.estimate_verdict.flag == "below 1 MB"
    assert report.rows_counted >= 45 + 40 + 5 + 40 + 3 + 1
    assert not report.budget_reached


def test_sharded_hours_are_sized_per_shard(site, monkeypatch):
    site.event_shards = 4
    site.save()
    visits(site)
    rows = sources.site_bucket_events(site_id=site.id, hour=HOUR, shards=4)
    shard_of = {row["event_id"]: zlib.crc32(row["event_id"].bytes) % 4 for row in rows}
    per_shard = Counter(shard_of.values())
    assert sum(per_shard.values()) == 45 and len(per_shard) > 1

    report = partition_report.partition_report(
        site_id=site.id, event_shards=4, now=FIXED_NOW, hours=24
    )
    site_events = by_table(report)["site_events_by_bucket"]
    assert site_events.partitions_counted == 4
    assert site_events.largest is not None
    assert site_events.largest.rows == max(per_shard.values())
    assert site_events.writes_per_second == pytest.approx(45 / 3600 / 4)
    assert "needs 1 shard(s); the site has 4" in site_events.note
    # The heavy user's events are spread over all four shards and all were read.
    assert by_table(report)["user_events_by_bucket"].writes_per_second == pytest.approx(40 / 3600)

    # Reading two shards of four: the users' counts are scaled by 4 / 2.
    monkeypatch.setattr(probes, "MAX_COUNTED", 2)
    report = partition_report.partition_report(
        site_id=site.id, event_shards=4, now=FIXED_NOW, hours=24
    )
    heavy_in_two = sum(
        1 for row in rows if row["user_key"] == "heavy" and shard_of[row["event_id"]] < 2
    )
    assert by_table(report)["site_events_by_bucket"].partitions_counted == 2
    assert by_table(report)["user_events_by_bucket"].writes_per_second == pytest.approx(
        heavy_in_two * 2 / 3600
    )


def test_a_heavy_user_in_month_buckets_is_flagged_and_sent_to_a_finer_width(site):
    props = {f"k{i}": "v" * 60 for i in range(50)}  # about 3.4 KB of JSON per event
    with override_settings(USER_EVENTS_BUCKET="month"):
        for start in (0, 100):
            events = [
                event(HOUR + timedelta(seconds=2 * (start + i)), anon="bot-like", props=props)
                for i in range(100)
            ]
            assert record(site, events).accepted == 100
        report = partition_report.partition_report(
            site_id=site.id, event_shards=site.event_shards, now=FIXED_NOW, hours=3
        )
    user_events = by_table(report)["user_events_by_bucket"]
    assert user_events.width is Width.MONTH
    assert user_events.largest is not None and user_events.largest.rows == 200
    assert user_events.row_bytes > 3000
    # 200 events an hour for a 30-day month: 144,000 rows of ~3.5 KB, about 500 MB.
    assert user_events.estimate_bytes > 100 * sizing.MB
    assert user_events.estimate_verdict.flag == "above 100 MB"
    assert user_events.recommendation is not None
    assert user_events.recommendation.width is Width.DAY  # 4,800 rows a day, ~17 MB
    assert user_events.recommendation.verdict is Verdict.TARGET
    assert "above 100MB" not in user_events.recommendation.reason
    # What was counted is still small: the flag comes from the rate, not from the rows.
    assert user_events.observed_verdict is Verdict.TOO_SMALL


def test_counts_stop_at_the_cap_and_say_so(site, monkeypatch):
    visits(site)
    monkeypatch.setattr(counting, "COUNT_CAP", 10)
    report = partition_report.partition_report(
        site_id=site.id, event_shards=site.event_shards, now=FIXED_NOW, hours=24
    )
    site_events = by_table(report)["site_events_by_bucket"]
    assert site_events.largest is not None
    assert (site_events.largest.rows, site_events.largest.capped) == (10, True)
    assert site_events.observed_bytes == 10 * site_events.row_bytes  # a lower bound
    assert by_table(report)["ingest_stats"].largest == counting.Counted(
        key="bucket=2026-03-14 15:00", rows=3, capped=False
    )
    assert not report.budget_reached


def test_the_row_budget_bounds_the_whole_report(site, monkeypatch):
    visits(site)
    monkeypatch.setattr(partition_report, "ROW_BUDGET", 50)
    report = partition_report.partition_report(
        site_id=site.id, event_shards=site.event_shards, now=FIXED_NOW, hours=24
    )
    assert report.budget_reached
    assert report.rows_counted == 50
    tables = by_table(report)
    assert tables["site_events_by_bucket"].largest.rows == 45  # type: ignore[union-attr]
    heavy = tables["user_events_by_bucket"].largest
    assert heavy is not None and (heavy.rows, heavy.capped) == (5, True)
    assert tables["latest_sessions"].largest is None  # nothing left to count with


def test_a_quiet_window_estimates_nothing(site):
    visits(site)
    later = FIXED_NOW + timedelta(days=3)
    report = partition_report.partition_report(
        site_id=site.id, event_shards=site.event_shards, now=later, hours=6
    )
    assert report.peak is None
    tables = by_table(report)
    assert all(t.estimate_bytes == 0 for t in report.tables)
    assert tables["site_events_by_bucket"].largest is None
    assert not tables["site_events_by_bucket"].row_bytes_measured
    assert tables["site_events_by_bucket"].row_bytes == settings.SITE_EVENT_ROW_BYTES
    assert tables["failed_events"].largest == counting.Counted(
        key=f"day={later.date().isoformat()}", rows=0, capped=False
    )


def test_ingest_hours_sums_each_hour(site):
    first = event(HOUR + timedelta(minutes=1), id="once")
    record(site, [first, event(HOUR + timedelta(minutes=2))])
    record(site, [first, {"id": "x", "type": "pageview"}])  # a duplicate and a rejection
    record(site, [event(HOUR - timedelta(minutes=30))], at=HOUR - timedelta(minutes=20))
    hours = ingest_hours(
        site_id=site.id, start=HOUR - timedelta(hours=2), end=HOUR + timedelta(hours=1)
    )
    assert [(h.hour, h.requests, h.accepted, h.rejected) for h in hours] == [
        (HOUR - timedelta(hours=2), 0, 0, 0),
        (HOUR - timedelta(hours=1), 1, 1, 0),
        (HOUR, 2, 2, 1),
    ]


def test_window_is_capped_at_a_week(site):
    for hours in (0, MAX_WINDOW_HOURS + 1):
        with pytest.raises(ValueError, match="hours: between 1 and 168"):
            partition_report.partition_report(
                site_id=site.id, event_shards=1, now=FIXED_NOW, hours=hours
            )


def test_size_estimates_name_only_this_keyspaces_tables():
    estimates = size_estimates()
    assert set(estimates) <= {model.__table_name__ for model in CASSANDRA_MODELS}
    for estimate in estimates.values():
        assert estimate.partitions >= 0 and estimate.mean_bytes >= 0


def test_estimates_combine_weights_the_mean_by_partitions():
    rows = [
        {"table_name": "a", "mean_partition_size": 1000, "partitions_count": 3},
        {"table_name": "a", "mean_partition_size": 5000, "partitions_count": 1},
        {"table_name": "a", "mean_partition_size": 0, "partitions_count": 0},
        {"table_name": "b", "mean_partition_size": 0, "partitions_count": 0},
    ]
    assert estimates_combine(rows) == {
        "a": TableEstimate(partitions=4, mean_bytes=2000),
        "b": TableEstimate(partitions=0, mean_bytes=0),
    }


def test_value_bytes_of_driver_values():
    row = {
        "event_id": uuid.uuid4(),
        "ts": datetime(2026, 1, 1, tzinfo=UTC),
        "url": "https://é.example/",  # é is two bytes in UTF-8
        "late": False,
        "count": 7,
        "payload": b"\x00" * 10,
        "rejected": {"ts": 2},
        "missing": None,
    }
    assert mean_row_bytes([row]) == (16 + 8 + 19 + 1 + 4 + 10 + (2 + 4) + 0, 1)
    assert mean_row_bytes([]) == (0, 0)
    with pytest.raises(TypeError, match="no size for a column value of type object"):
        value_bytes(object())


def test_the_report_counts_a_sealed_hours_per_user_counts(site):

    visits(site)
    seal.bucket_seal(site_id=site.id, hour=HOUR, now=FIXED_NOW + timedelta(hours=2))
    users = stored.bucket_user_counts(site_id=site.id, granularity="hour", bucket_starts=[HOUR])
    report = partition_report.partition_report(
        site_id=site.id, event_shards=site.event_shards, now=FIXED_NOW, hours=24
    )
    counts = by_table(report)["bucket_users"]
    assert users and counts.largest is not None
    assert counts.largest.rows == len(users)  # a row per user
    assert counts.row_bytes_measured and counts.row_bytes > 0
