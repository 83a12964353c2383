"""Counting rows of real partitions for the report: the window, the budget, the sampled row size."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sessions_app.domain.ledger import sizing
from sessions_app.domain.ledger.sizing import Recommendation, Verdict
from sessions_app.domain.partitions.estimates import HourIngest, TableEstimate, mean_row_bytes
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.cql import cassandra_session, prepare
from sessions_app.foundation.core.timebuckets import Width

COUNT_CAP = 250_000  # rows counted in one partition; 250,000 x 400 B is the 100 MB ceiling
ROW_BUDGET = 1_000_000  # rows counted in one report, all partitions together
SAMPLE_ROWS = 100  # rows read to measure the mean row size
TOP_KEYS = 3  # heaviest users and sessions of the peak hour whose partitions are counted
MAX_COUNTED = 32  # partitions counted per table
LATEST_SESSIONS_TTL = timedelta(days=1)  # LatestSession's default_time_to_live

# Row sizes assumed when a table has no rows to sample (ARCHITECTURE.md's sizing figures
# where it gives one); site events use SITE_EVENT_ROW_BYTES.
ASSUMED_ROW_BYTES = {
    "user_events_by_bucket": 500,
    "session_events": 600,
    "transaction_log": 3000,
    "ingest_stats": 100,
    "failed_events": 1000,
    "latest_sessions": 200,
    "site_sessions": 650,
    "bucket_users": 70,
    "replay_chunks": 6000,  # a chunk of a demo-shop page load (docs/replay.md)
}


@dataclass(frozen=True)
class Counted:
    """One partition's rows, counted up to a cap (then `rows` is a lower bound)."""

    key: str
    rows: int
    capped: bool


@dataclass(frozen=True)
class TableSize:
    """Estimated and observed partition sizes of one table."""

    table: str
    partition_key: str
    span: str  # what one partition covers
    width: Width | None  # its bucket width, None when not bucketed by a width
    writes_per_second: float  # into the heaviest partition, at the peak hour
    row_bytes: int
    row_bytes_measured: bool  # False: nothing to sample, ASSUMED_ROW_BYTES
    estimate_bytes: float
    largest: Counted | None
    partitions_counted: int
    cassandra: TableEstimate | None
    recommendation: Recommendation | None
    note: str = ""

    @property
    def estimate_verdict(self) -> Verdict:
        return sizing.verdict(self.estimate_bytes)

    @property
    def observed_bytes(self) -> float | None:
        return None if self.largest is None else self.largest.rows * self.row_bytes

    @property
    def observed_verdict(self) -> Verdict | None:
        observed = self.observed_bytes
        return None if observed is None else sizing.verdict(observed)


class RowCounter:
    """Counts rows of named partitions, LIMIT-capped, within the report's row budget."""

    def __init__(self, budget: int) -> None:
        self.left = budget
        self.total = 0
        self.budget_reached = False

    def count(
        self,
        cql: str,
        params: tuple[Any, ...],
        key: str,
        tally: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> Counted | None:
        """Return the partition's rows up to COUNT_CAP, or None once the budget is spent."""
        if self.left <= 0:
            self.budget_reached = True
            return None
        cap = min(COUNT_CAP, self.left)
        seen = 0
        # LIMIT cap + 1: one row past the cap tells that the count is a lower bound.
        for row in cassandra_session().execute(
            prepare(cql), (*params, cap + 1)
        ):  # paged by the driver
            seen += 1
            if tally is not None and seen <= cap:
                tally(row)
        rows, capped = min(seen, cap), seen > cap
        if capped and cap < COUNT_CAP:
            self.budget_reached = True
        self.left -= rows
        self.total += rows
        return Counted(key=key, rows=rows, capped=capped)


class CountedPartitions:
    """The partitions of one table counted for the report, and the largest one's rows."""

    def __init__(self, counter: RowCounter, *, count_cql: str, sample_cql: str) -> None:
        self.counter = counter
        self.count_cql = count_cql
        self.sample_cql = sample_cql
        self.counted: list[tuple[Counted, tuple[Any, ...]]] = []

    def count(
        self,
        params: tuple[Any, ...],
        key: str,
        tally: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> None:
        found = self.counter.count(self.count_cql, params, key, tally)
        if found is not None:
            self.counted.append((found, params))

    def largest(self) -> tuple[Counted | None, tuple[Any, ...] | None]:
        if not self.counted:
            return None, None
        return max(self.counted, key=lambda item: item[0].rows)

    def row_bytes(self, assumed: int) -> tuple[int, bool]:
        """Return (mean row bytes, measured?) from up to SAMPLE_ROWS rows of the largest."""
        largest, params = self.largest()
        if largest is not None and largest.rows and params is not None:
            rows = cassandra_session().execute(prepare(self.sample_cql), (*params, SAMPLE_ROWS))
            mean, measured = mean_row_bytes(rows)
            if measured:
                return mean, True
        return assumed, False


@dataclass(frozen=True)
class Window:
    """What the per-table readers share: the site, the window's peaks and the budget."""

    site_id: uuid.UUID
    shards: int
    start: datetime
    end: datetime
    peak: HourIngest | None  # most accepted events
    peak_requests: HourIngest | None  # most requests
    peak_rejected: int  # most rejected events in one hour
    counter: RowCounter
    estimates: dict[str, TableEstimate]

    def partitions(self, *, count_cql: str, sample_cql: str) -> CountedPartitions:
        return CountedPartitions(self.counter, count_cql=count_cql, sample_cql=sample_cql)

    def size(
        self,
        table: str,
        partitions: CountedPartitions,
        *,
        partition_key: str,
        span: str,
        duration: timedelta,
        width: Width | None,
        rate: float,
        assumed_row_bytes: int,
        note: str,
    ) -> TableSize:
        row_bytes, measured = partitions.row_bytes(assumed_row_bytes)
        recommendation = (
            sizing.recommend_width(writes_per_second=rate, row_bytes=row_bytes)
            if width is not None
            else None
        )
        return TableSize(
            table=table,
            partition_key=partition_key,
            span=span,
            width=width,
            writes_per_second=rate,
            row_bytes=row_bytes,
            row_bytes_measured=measured,
            estimate_bytes=sizing.span_bytes(
                writes_per_second=rate, row_bytes=row_bytes, span=duration
            ),
            largest=partitions.largest()[0],
            partitions_counted=len(partitions.counted),
            cassandra=self.estimates.get(table),
            recommendation=recommendation,
            note=note,
        )


def stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def hour_span(hour: datetime, width: Width) -> list[datetime]:
    return timebuckets.buckets_between(hour, hour + timedelta(hours=1), width)
