"""Analyst reads on the real node: order across buckets, stable cursors, caps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.sessions import activity, lists
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import RangeError
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])


@pytest.mark.parametrize(
    ("strategy", "per_query"),
    [("in", 4), ("parallel", 1), ("parallel", 2), ("parallel", 4), ("sequential", 4)],
)
def test_paging_across_buckets_returns_every_event_once_in_order(
    site, history, strategy, per_query, settings
):
    settings.ACTIVITY_IN_MAX_BUCKETS = 10
    settings.ACTIVITY_PARALLEL_IN_BUCKETS = per_query
    times, now = history
    start, end = times[0] - timedelta(hours=1), now
    seen, cursor, pages = [], None, 0
    while True:
        page = activity.user_activity(
            site_id=site.id,
            user_key="hist",
            start=start,
            end=end,
            limit=4,
            cursor=cursor,
            strategy=strategy,
        )
        seen.extend(e["ts"] for e in page.events)
        pages += 1
        assert page.strategy == strategy
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == times  # nothing skipped or repeated at a bucket boundary
    assert pages == 8


def test_auto_strategy_uses_in_for_few_buckets_and_parallel_beyond(site, history, settings):
    settings.ACTIVITY_IN_MAX_BUCKETS = 3
    times, now = history
    few = activity.user_activity(
        site_id=site.id, user_key="hist", start=now - timedelta(hours=30), end=now
    )
    assert few.strategy == "in" and len(few.partitions) <= 3
    many = activity.user_activity(site_id=site.id, user_key="hist", start=times[0], end=now)
    assert many.strategy == "parallel"
    assert [p["bucket"] for p in many.partitions] == sorted(p["bucket"] for p in many.partitions)
    assert sum(p["rows"] for p in many.partitions) >= len(times)


@pytest.mark.parametrize(
    ("per_query", "in_max", "queries"),
    [(1, 10, 9), (2, 10, 5), (4, 10, 3), (20, 10, 1), (20, 4, 3)],
)
def test_parallel_reads_a_few_buckets_a_query_and_the_same_events(
    site, history, settings, per_query, in_max, queries
):
    """Nine daily buckets: IN lists of per_query of them, never more than the IN maximum."""
    settings.ACTIVITY_IN_MAX_BUCKETS = in_max
    settings.ACTIVITY_PARALLEL_IN_BUCKETS = per_query
    times, now = history
    start = timebuckets.floor(times[0], "day") - timedelta(days=1)
    args = dict(site_id=site.id, user_key="hist", start=start, end=now, limit=1000)
    baseline = activity.user_activity(**args, strategy="sequential")
    page = activity.user_activity(**args, strategy="parallel")
    assert len(page.partitions) == len(baseline.partitions) == baseline.queries == 9
    assert page.queries == queries
    assert page.events == baseline.events
    assert [e["ts"] for e in page.events] == times
    assert page.partitions == baseline.partitions  # per-bucket row counts, in bucket order


def test_an_in_lists_rows_come_out_in_time_order_whatever_order_its_partitions_arrive():
    """Rows of each partition in clustering order; partitions in any order (no promise)."""
    from datetime import UTC, datetime

    from sessions_app.foundation.core.ids import time_uuid

    days = [datetime(2026, 3, d, tzinfo=UTC) for d in (1, 2, 3)]

    def rows_of(day, n):  # what the driver gives: the bucket naive, in UTC
        return [
            {
                "bucket": day.replace(tzinfo=None),
                "event_id": time_uuid(day + timedelta(hours=i), f"{day.day}-{i}"),
                "ts": (day + timedelta(hours=i)).replace(tzinfo=None),
                "element": None,
                "props": f'{{"i": {i}}}',
            }
            for i in range(n)
        ]

    arrived = rows_of(days[2], 2) + rows_of(days[0], 3) + rows_of(days[1], 0)
    found, per_bucket = activity._bucket_rows(arrived, days)

    assert [e["ts"] for e in found] == sorted(e["ts"] for e in found)
    assert [e["ts"].tzinfo for e in found] == [UTC] * 5
    assert [e["props"]["i"] for e in found] == [0, 1, 2, 0, 1]
    assert per_bucket == {days[0]: 3, days[1]: 0, days[2]: 2}
    assert "bucket" not in found[0]


def test_range_boundaries_are_half_open(site, history):
    times, _ = history
    page = activity.user_activity(site_id=site.id, user_key="hist", start=times[1], end=times[3])
    assert [e["ts"] for e in page.events] == times[1:3]


def test_empty_range_and_unknown_user(site, history):
    times, _ = history
    assert (
        activity.user_activity(
            site_id=site.id, user_key="nobody", start=times[0], end=times[-1]
        ).events
        == []
    )
    gap = activity.user_activity(
        site_id=site.id,
        user_key="hist",
        start=times[4] + timedelta(minutes=1),
        end=times[5] - timedelta(minutes=1),
    )
    assert gap.events == [] and gap.next_cursor is None


def test_caps_are_clear_errors(site):
    now = timezone.now()
    with pytest.raises(RangeError, match="end: range longer than 92 days"):
        activity.user_activity(
            site_id=site.id, user_key="u", start=now - timedelta(days=93), end=now
        )
    with pytest.raises(RangeError, match="end: must be after start"):
        activity.user_activity(site_id=site.id, user_key="u", start=now, end=now)
    with pytest.raises(ValueError, match="limit must be between 1 and 1000"):
        activity.user_activity(
            site_id=site.id, user_key="u", start=now - timedelta(days=1), end=now, limit=1001
        )
    with pytest.raises(RangeError, match="strategy: IN reads at most"):
        activity.user_activity(
            site_id=site.id, user_key="u", start=now - timedelta(days=30), end=now, strategy="in"
        )


def test_session_pages_merge_linked_ids_newest_first(site):
    now = timezone.now().replace(microsecond=0)
    for hours, anon, user in (
        (50, "a-1", None),
        (30, "a-2", None),
        (10, "a-2", "u-9"),
        (5, "a-3", "u-9"),
    ):
        ts = now - timedelta(hours=hours)
        events_record(
            source=Source(site=site, received_at=now),
            raw_events=[event(ts, anon=anon, user_id=user) if user else event(ts, anon=anon)],
        )
    linked = lists.identity_links(site_id=site.id, user_id="u-9")
    assert sorted(linked) == ["a-2", "a-3"]
    first = lists.sessions_page(site_id=site.id, user_keys=["u-9", *linked], limit=2)
    assert [s["started_at"] for s in first.sessions] == [
        now - timedelta(hours=5),
        now - timedelta(hours=10),
    ]
    rest = lists.sessions_page(
        site_id=site.id, user_keys=["u-9", *linked], limit=2, before=first.next_cursor
    )
    assert [(s["user_key"], s["started_at"]) for s in rest.sessions] == [
        ("a-2", now - timedelta(hours=30))
    ]
    assert rest.next_cursor is None
