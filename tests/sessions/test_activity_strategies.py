"""One contract for the three ways a user's activity is read across time buckets: one IN
query, parallel IN lists of a few buckets, or one query a bucket in sequence."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sessions_app.domain.sessions import activity
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare

pytestmark = pytest.mark.django_db(databases=["default", "cassandra"])

ALL_OF_A_BUCKET = """
SELECT event_id, ts FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ?
"""


class ActivityReadContract:
    """The contract; each subclass names its strategy."""

    strategy: str

    def _read(self, site, start, end, **kwargs):
        return activity.user_activity(
            site_id=site.id, user_key="hist", start=start, end=end, strategy=self.strategy, **kwargs
        )

    def test_pages_hold_every_event_once_in_time_order(self, site, history, settings):
        settings.ACTIVITY_IN_MAX_BUCKETS = 10
        times, now = history
        seen, cursor = [], None
        while True:
            page = self._read(site, times[0] - timedelta(hours=1), now, limit=3, cursor=cursor)
            assert page.strategy == self.strategy and len(page.events) <= 3
            seen.extend(page.events)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert [e["ts"] for e in seen] == times
        assert len({e["event_id"] for e in seen}) == len(times)

    def test_the_events_are_a_brute_force_read_of_every_bucket_in_the_range(
        self, site, history, settings
    ):
        settings.ACTIVITY_IN_MAX_BUCKETS = 10
        times, _ = history
        start, end = times[3], times[-2]  # half-open: times[-2] itself is left out
        page = self._read(site, start, end, limit=1000)
        width = settings.USER_EVENTS_BUCKET
        rows = [
            row
            for bucket in timebuckets.iter_buckets(timebuckets.floor(start, width), end, width)
            for row in cassandra_session().execute(
                prepare(ALL_OF_A_BUCKET), (site.id, "hist", bucket)
            )
        ]
        expected = sorted(
            (r for r in rows if start <= timebuckets.from_driver(r["ts"]) < end),
            key=lambda r: r["event_id"].time,
        )
        assert [e["event_id"] for e in page.events] == [r["event_id"] for r in expected]
        assert len(expected) == sum(start <= t < end for t in times) > 0

    def test_an_empty_range_is_an_empty_page(self, site, history, settings):
        settings.ACTIVITY_IN_MAX_BUCKETS = 10
        times, _ = history
        page = self._read(site, times[0] - timedelta(days=3), times[0] - timedelta(days=2))
        assert page.events == [] and page.next_cursor is None


class TestInRead(ActivityReadContract):
    strategy = "in"


class TestParallelReads(ActivityReadContract):
    strategy = "parallel"


class TestSequentialReads(ActivityReadContract):
    strategy = "sequential"
