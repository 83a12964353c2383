"""Rolling-window counters: a user's counts over a window, from sealed buckets of every width."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models.functions import TruncDay

from sessions_app.domain.ledger.widths import user_partitions
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import MAX_RANGE_BUCKETS, RangeError
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.ids import time_uuid_bound
from sessions_app.foundation.models import BucketState
from sessions_app.foundation.tables import rolling_counts as rolling_counts_table
from sessions_app.foundation.tables import user_events_by_bucket

ROLLING_WINDOWS = (
    ("1h", timedelta(hours=1)),
    ("24h", timedelta(hours=24)),
    ("7d", timedelta(days=7)),
    ("30d", timedelta(days=30)),
    ("12mo", timedelta(days=365)),
)

ROLLING_WIDTHS = (timebuckets.Width.MONTH, timebuckets.Width.DAY, timebuckets.Width.HOUR)
MAX_ROLLING_RAW_ROWS = 100_000


class SealedBuckets:
    """Which buckets of a site a cover may take from stored per-bucket counts.

    A bucket qualifies when it is sealed, or when it is provably empty: past its
    sealing time with no state of its own and none inside it (every event opens
    its hour's state, so no state means no events). States are fetched from SQL
    one counter period at a time (a month of hours, a year of days, all months).
    """

    def __init__(self, site_id: uuid.UUID, now: datetime) -> None:
        self.site_id = site_id
        self.now = timebuckets.as_utc(now)
        self._states: dict[tuple[str, datetime], dict[datetime, str]] = {}
        self._busy_days: dict[datetime, set[datetime]] = {}

    def __call__(self, width: timebuckets.Width, start: datetime) -> bool:
        period = timebuckets.rolling_period(width, start)
        states = self._load(width, period)
        state = states.get(start)
        if state is not None:
            return state == BucketState.SEALED
        end = timebuckets.next_start(start, width)
        if end + settings.ALLOWED_LATENESS > self.now:
            return False  # events may still arrive
        if width is timebuckets.Width.HOUR:
            return True
        if width is timebuckets.Width.DAY:
            return start not in self._days_with_hours(period)
        return not BucketState.objects.filter(
            site_id=self.site_id, bucket__gte=start, bucket__lt=end
        ).exists()

    def _load(self, width: timebuckets.Width, period: datetime) -> dict[datetime, str]:
        key = (width.value, period)
        if key not in self._states:
            rows = BucketState.objects.filter(site_id=self.site_id, granularity=width.value)
            if width is not timebuckets.Width.MONTH:
                rows = rows.filter(
                    bucket__gte=period, bucket__lt=timebuckets.rolling_period_end(width, period)
                )
            self._states[key] = {
                timebuckets.as_utc(b): state for b, state in rows.values_list("bucket", "state")
            }
        return self._states[key]

    def _days_with_hours(self, year: datetime) -> set[datetime]:
        """The days of a year that have any hour state (their events may be unsealed)."""
        if year not in self._busy_days:
            days = (
                BucketState.objects.filter(
                    site_id=self.site_id,
                    granularity="hour",
                    bucket__gte=year,
                    bucket__lt=timebuckets.rolling_period_end(timebuckets.Width.DAY, year),
                )
                .annotate(day=TruncDay("bucket", tzinfo=UTC))
                .values_list("day", flat=True)
                .distinct()
            )
            self._busy_days[year] = {timebuckets.as_utc(d) for d in days}
        return self._busy_days[year]


@dataclass(frozen=True)
class RollingCount:
    window: str
    start: datetime
    end: datetime
    count: int
    partitions_read: int
    rows_read: int
    pieces: list[tuple[str, datetime, datetime]]


def rolling_count(
    *,
    site_id: uuid.UUID,
    user_key: str,
    event_key: str,
    start: datetime,
    end: datetime,
    sealed: Callable[[timebuckets.Width, datetime], bool] | None = None,
    window: str = "",
    widths: tuple[timebuckets.Width, ...] = ROLLING_WIDTHS,
) -> RollingCount:
    """Count a user's events with this key (custom name, else type) in [start, end).

    The range is covered by the largest sealed buckets that fit inside it
    (months, then days, then hours at the edges) whose per-user counts the seals
    wrote, and the rest (the very edges, unsealed or reopened buckets) is counted
    from the user's raw event partitions. All partitions are read in parallel.
    """
    start, end = _check_rolling_range(start, end)
    usable = sealed or SealedBuckets(site_id, end)
    pieces = timebuckets.cover(start, end, widths, usable)
    wanted: dict[tuple[str, datetime], set[datetime]] = {}
    raw: list[tuple[datetime, datetime]] = []
    for width, low, high in pieces:
        if width == timebuckets.RAW:
            raw.append((low, high))
        else:
            wanted.setdefault((width, timebuckets.rolling_period(width, low)), set()).add(low)
    counted = prepare(rolling_counts_table.SELECT_PERIODS)
    futures: list[tuple[set[datetime] | None, Any]] = [
        (
            starts,
            cassandra_session().execute_async(
                counted,
                (site_id, user_key, width, period, event_key, min(starts), max(starts)),
            ),
        )
        for (width, period), starts in wanted.items()
    ]
    raw_partitions = _raw_reads(futures, site_id=site_id, user_key=user_key, raw=raw)
    total, rows_read = _summed(futures, event_key)
    return RollingCount(
        window, start, end, total, len(wanted) + len(raw_partitions), rows_read, pieces
    )


def _raw_reads(
    futures: list[tuple[set[datetime] | None, Any]],
    *,
    site_id: uuid.UUID,
    user_key: str,
    raw: list[tuple[datetime, datetime]],
) -> set[datetime]:
    """Start reading the user's raw partitions of the `raw` pieces (appended to `futures`,
    without buckets); return the partitions."""
    raw_statement = prepare(user_events_by_bucket.SELECT_KEYS)
    raw_partitions: set[datetime] = set()
    for low, high in raw:
        for bucket in user_partitions(
            site_id=site_id, user_key=user_key, start=low, end=high, limit=MAX_RANGE_BUCKETS * 24
        ):
            raw_partitions.add(bucket)
            bounds = (time_uuid_bound(low), time_uuid_bound(high))
            futures.append(
                (
                    None,
                    cassandra_session().execute_async(
                        raw_statement, (site_id, user_key, bucket, *bounds)
                    ),
                )
            )
    return raw_partitions


def _summed(futures: list[tuple[set[datetime] | None, Any]], event_key: str) -> tuple[int, int]:
    """The count over every read (stored counts of the wanted buckets, raw rows of the
    key) and the rows read."""
    total, raw_rows, rows_read = 0, 0, 0
    for starts, future in futures:
        if starts is not None:  # a period's stored rows: at most a row a bucket and key
            rows = list(future.result())
            rows_read += len(rows)
            for bucket, n in rolling_counts_table.read_count(rows, event_key).items():
                if timebuckets.from_driver(bucket) in starts:  # skip reopened buckets
                    total += n
            continue
        for row in future.result():  # raw rows, page by page: the cap stops the paging
            rows_read += 1
            raw_rows += 1
            if raw_rows > MAX_ROLLING_RAW_ROWS:
                raise RangeError("event", "too many raw events to count; seal the buckets first")
            kind = row["type"]
            if ((row["name"] or kind) if kind == "custom" else kind) == event_key:
                total += 1
    return total, rows_read


def _check_rolling_range(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start, end = timebuckets.as_utc(start), timebuckets.as_utc(end)
    if end <= start:
        raise RangeError("end", "must be after start")
    if end - start > timedelta(days=366):
        raise RangeError("end", "rolling counters cover at most 366 days")
    return start, end


def rolling_counts(
    *, site_id: uuid.UUID, user_key: str, event_key: str, now: datetime
) -> list[RollingCount]:
    """Return a user's counts of one event key over the last 1 h, 24 h, 7 d, 30 d, 12 months."""
    now = timebuckets.as_utc(now)
    sealed = SealedBuckets(site_id, now)  # shared: the windows overlap
    return [
        rolling_count(
            site_id=site_id,
            user_key=user_key,
            event_key=event_key,
            start=now - length,
            end=now,
            sealed=sealed,
            window=name,
        )
        for name, length in ROLLING_WINDOWS
    ]
