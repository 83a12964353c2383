"""Adaptive user buckets (adaptive per-entity bucket width): a super-active user moves to hour
buckets from their next bucket on, and reads still find every event."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.domain.aggregates import rolling, seal
from sessions_app.domain.ingest.pipeline import Source, events_record
from sessions_app.domain.ledger import widths
from sessions_app.domain.sessions import activity
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.models import UserBucketWidth
from tests.support.events import event

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])
COUNT_PARTITION = """
SELECT COUNT(*) AS n FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ?
"""


def _record(site, ts, user: str, tag: str) -> None:
    events_record(
        source=Source(site=site, received_at=ts + timedelta(seconds=2)),
        raw_events=[event(ts, anon=user, id=tag)],
    )


def _rows(site, user: str, bucket) -> int:
    return cassandra_session().execute(prepare(COUNT_PARTITION), (site.id, user, bucket)).one()["n"]


def test_a_super_active_user_gets_hour_buckets_from_the_next_day(site, settings):
    # 60 events in an hour, kept up all day at 500 B: 720 KB a day; budget 500 KB.
    settings.USER_PARTITION_BUDGET_BYTES = 500_000
    now = timezone.now().replace(microsecond=0)
    hour = timebuckets.floor(now - timedelta(hours=3), "hour")
    for i in range(60):
        _record(site, hour + timedelta(seconds=30 * i), "busy", f"busy-{i}")
    _record(site, hour + timedelta(minutes=5), "calm", "calm-0")
    seal.bucket_seal(site_id=site.id, hour=hour, now=now)
    [change] = UserBucketWidth.objects.filter(site=site)
    assert (change.user_key, change.width) == ("busy", "hour")
    assert change.effective_from == timebuckets.next_start(now + timedelta(hours=1), "day")
    assert "60 events" in change.reason
    seal.bucket_seal(site_id=site.id, hour=hour, now=now)  # idempotent
    assert UserBucketWidth.objects.filter(site=site).count() == 1


def test_writes_and_reads_follow_the_width_history(site):
    now = timezone.now().replace(microsecond=0)
    switch = timebuckets.floor(now - timedelta(days=2), "day")  # hour buckets from here on
    UserBucketWidth.objects.create(site=site, user_key="busy", width="hour", effective_from=switch)
    widths.user_widths_forget(site.id)
    before = [switch - timedelta(hours=5, minutes=i) for i in range(3)]
    after = [switch + timedelta(hours=h, minutes=7) for h in (0, 1, 30)]
    for i, ts in enumerate(sorted(before + after)):
        _record(site, ts, "busy", f"h-{i}")

    day_before = switch - timedelta(days=1)
    assert _rows(site, "busy", day_before) == 3  # the old day partition
    assert _rows(site, "busy", switch) == 1  # from the switch on: the hour 00:00 partition
    assert _rows(site, "busy", switch + timedelta(hours=1)) == 1
    assert _rows(site, "busy", switch + timedelta(hours=30)) == 1

    page = activity.user_activity(
        site_id=site.id,
        user_key="busy",
        start=day_before,
        end=switch + timedelta(days=2),
        limit=2,
        strategy="parallel",
    )
    read = [p["bucket"] for p in page.partitions]
    assert (read[0] == day_before and switch + timedelta(hours=1) in read) or len(read) >= 1
    seen, cursor = [], None
    while True:  # cursor paging across the width change
        page = activity.user_activity(
            site_id=site.id,
            user_key="busy",
            start=day_before,
            end=switch + timedelta(days=2),
            limit=2,
            cursor=cursor,
        )
        seen.extend(e["ts"] for e in page.events)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(before + after)

    counts = rolling.rolling_counts(site_id=site.id, user_key="busy", event_key="pageview", now=now)
    assert counts[-1].count == 6  # the 12-month window, from raw partitions of both widths
