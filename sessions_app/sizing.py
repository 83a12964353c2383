"""Reads for the partition-size report (seed 003, "Monitoring and Maintenance").

For each table whose partitions take writes over a span of time (a bucket, a
session, a TTL window) the report puts three sizes side by side:

- the estimate: seed 003's formula, with the write rate observed in
  `ingest_stats` at the window's peak hour and the mean row size measured on
  rows sampled from the largest partition found (an assumed size if none);
- Cassandra's own figure: `system.size_estimates` (mean partition size and
  partition count per table). It covers flushed SSTables only and the primary
  ranges of the node that answers, and is refreshed every few minutes, so a
  fresh node shows nothing until its memtables are flushed;
- the largest recent partitions the report can name from known keys (the peak
  hour's shards, its heaviest users and sessions, the log buckets of that
  hour, the feed sentinels): rows counted x mean row size.

Every query names one partition and has a LIMIT; counting stops at COUNT_CAP
rows a partition and ROW_BUDGET rows a report, so a count that hit a cap is a
lower bound and says so.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings

from sessions_app import buckets
from sessions_app.buckets import Recommendation, Verdict, Width
from sessions_app.cassandra import keyspace, prepare, session

MAX_WINDOW_HOURS = 168
COUNT_CAP = 250_000  # rows counted in one partition; 250,000 x 400 B is the 100 MB ceiling
ROW_BUDGET = 1_000_000  # rows counted in one report, all partitions together
SAMPLE_ROWS = 100  # rows read to measure the mean row size
TOP_KEYS = 3  # heaviest users and sessions of the peak hour whose partitions are counted
MAX_COUNTED = 32  # partitions counted per table
ESTIMATE_ROWS_LIMIT = 10_000  # size_estimates rows read (tables x token ranges)
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
    "bucket_users": 70,
}

SELECT_INGEST_TOTALS = """
SELECT count(*) AS requests, sum(CAST(accepted AS bigint)) AS accepted,
       sum(CAST(received AS bigint)) AS received, sum(CAST(duplicates AS bigint)) AS duplicates
FROM {ks}.ingest_stats WHERE site_id = ? AND bucket = ?
"""
SELECT_SIZE_ESTIMATES = """
SELECT table_name, mean_partition_size, partitions_count FROM system.size_estimates
WHERE keyspace_name = ? LIMIT ?
"""

# Counting reads the first clustering column only (site events: the keys to tally).
COUNT_SITE_EVENTS = """
SELECT user_key, session_id FROM {ks}.site_events_by_bucket
WHERE site_id = ? AND bucket = ? AND shard = ? LIMIT ?
"""
COUNT_USER_EVENTS = """
SELECT event_id FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? LIMIT ?
"""
COUNT_SESSION_EVENTS = "SELECT event_id FROM {ks}.session_events WHERE session_id = ? LIMIT ?"
COUNT_TXLOG = """
SELECT batch_id FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? LIMIT ?
"""
COUNT_INGEST = "SELECT batch_id FROM {ks}.ingest_stats WHERE site_id = ? AND bucket = ? LIMIT ?"
COUNT_FAILED = "SELECT failed_id FROM {ks}.failed_events WHERE site_id = ? AND day = ? LIMIT ?"
COUNT_BUCKET_USERS = """
SELECT user_key FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ? LIMIT ?
"""
COUNT_FEED = """
SELECT seen_id FROM {ks}.latest_sessions WHERE site_id = ? AND sentinel = ? LIMIT ?
"""

# Sampling reads every column stored per row: clustering and regular columns, not
# the partition key, which Cassandra stores once per partition.
SAMPLE_SITE_EVENTS = """
SELECT event_id, session_id, user_key, type, name, ts, url, element, is_bot, late
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ? LIMIT ?
"""
SAMPLE_USER_EVENTS = """
SELECT event_id, session_id, type, name, ts, url, element, props
FROM {ks}.user_events_by_bucket WHERE site_id = ? AND user_key = ? AND bucket = ? LIMIT ?
"""
SAMPLE_SESSION_EVENTS = """
SELECT event_id, site_id, user_key, ts, doc, type, name, url, referrer, title, element, props,
       late, clamped, is_bot
FROM {ks}.session_events WHERE session_id = ? LIMIT ?
"""
SAMPLE_TXLOG = """
SELECT batch_id, received_at, event_count, payload, applied
FROM {ks}.transaction_log WHERE site_id = ? AND minute = ? AND shard = ? LIMIT ?
"""
SAMPLE_INGEST = """
SELECT batch_id, received, accepted, duplicates, late, clamped, rejected
FROM {ks}.ingest_stats WHERE site_id = ? AND bucket = ? LIMIT ?
"""
SAMPLE_FAILED = """
SELECT failed_id, received_at, reason, field, source, payload
FROM {ks}.failed_events WHERE site_id = ? AND day = ? LIMIT ?
"""
SAMPLE_BUCKET_USERS = """
SELECT user_key, counts FROM {ks}.bucket_users
WHERE site_id = ? AND granularity = ? AND bucket = ? LIMIT ?
"""
SAMPLE_FEED = """
SELECT seen_id, session_id, user_key, started_at, last_seen_at, event_count, entry_url,
       exit_url, is_bot
FROM {ks}.latest_sessions WHERE site_id = ? AND sentinel = ? LIMIT ?
"""


@dataclass(frozen=True)
class HourIngest:
    """What ingest_stats recorded for one hour of a site."""

    hour: datetime
    requests: int
    accepted: int
    rejected: int


@dataclass(frozen=True)
class TableEstimate:
    """system.size_estimates for one table: partitions and their mean size."""

    partitions: int
    mean_bytes: int

    @property
    def verdict(self) -> Verdict:
        return buckets.verdict(self.mean_bytes)


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
        return buckets.verdict(self.estimate_bytes)

    @property
    def observed_bytes(self) -> float | None:
        return None if self.largest is None else self.largest.rows * self.row_bytes

    @property
    def observed_verdict(self) -> Verdict | None:
        observed = self.observed_bytes
        return None if observed is None else buckets.verdict(observed)


@dataclass(frozen=True)
class PartitionReport:
    """The partition-size report of one site over a window of hours."""

    site_id: uuid.UUID
    start: datetime
    end: datetime
    hours: list[HourIngest]
    peak: HourIngest | None  # the hour with the most accepted events
    tables: list[TableSize]
    estimates_found: bool  # size_estimates had rows for this keyspace
    rows_counted: int
    budget_reached: bool


def ingest_hours(*, site_id: uuid.UUID, start: datetime, end: datetime) -> list[HourIngest]:
    """Return requests, accepted and rejected events per hour of [start, end), in order.

    Summed by Cassandra within each hour's partition (one row per request), one
    query per hour, in parallel.
    """
    hours = buckets.buckets_between(start, end, Width.HOUR, limit=MAX_WINDOW_HOURS)
    statement = prepare(SELECT_INGEST_TOTALS)
    futures = [(h, session().execute_async(statement, (site_id, h))) for h in hours]
    result = []
    for hour, future in futures:
        row = future.result().one() or {}
        received, accepted = row.get("received") or 0, row.get("accepted") or 0
        result.append(
            HourIngest(
                hour=hour,
                requests=row.get("requests") or 0,
                accepted=accepted,
                rejected=received - accepted - (row.get("duplicates") or 0),
            )
        )
    return result


def estimates_combine(rows: Iterable[Mapping[str, Any]]) -> dict[str, TableEstimate]:
    """Combine size_estimates rows (one per token range) into one figure per table.

    Partition counts add up; the mean size is weighted by each range's count.
    """
    totals: dict[str, list[int]] = {}
    for row in rows:
        count = max(0, row["partitions_count"] or 0)
        mean = max(0, row["mean_partition_size"] or 0)
        entry = totals.setdefault(row["table_name"], [0, 0])
        entry[0] += count
        entry[1] += count * mean
    return {
        table: TableEstimate(partitions=count, mean_bytes=(total // count) if count else 0)
        for table, (count, total) in totals.items()
    }


def size_estimates() -> dict[str, TableEstimate]:
    """Return system.size_estimates of the active keyspace, per table (empty until flushed)."""
    rows = session().execute(prepare(SELECT_SIZE_ESTIMATES), (keyspace(), ESTIMATE_ROWS_LIMIT))
    return estimates_combine(rows)


def value_bytes(value: Any) -> int:
    """Return the bytes a column value takes as data (UTF-8 text, 16 B UUIDs, 8 B timestamps).

    Cassandra adds a few bytes of per-cell overhead and compresses on disk;
    this is the logical size the seed's "bytes per row" means.
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return 4
    if isinstance(value, float | datetime):
        return 8
    if isinstance(value, date):
        return 4
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, uuid.UUID):
        return 16
    if isinstance(value, Mapping):
        return sum(value_bytes(k) + value_bytes(v) for k, v in value.items())
    if isinstance(value, Iterable):
        return sum(value_bytes(v) for v in value)
    raise TypeError(f"no size for a column value of type {type(value).__name__}")


def mean_row_bytes(rows: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """Return (mean bytes per row, rows measured); (0, 0) when there are none."""
    sizes = [sum(value_bytes(v) for v in row.values()) for row in rows]
    return (round(sum(sizes) / len(sizes)), len(sizes)) if sizes else (0, 0)


class _Counter:
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
        for row in session().execute(prepare(cql), (*params, cap + 1)):  # paged by the driver
            seen += 1
            if tally is not None and seen <= cap:
                tally(row)
        rows, capped = min(seen, cap), seen > cap
        if capped and cap < COUNT_CAP:
            self.budget_reached = True
        self.left -= rows
        self.total += rows
        return Counted(key=key, rows=rows, capped=capped)


class _Partitions:
    """The partitions of one table counted for the report, and the largest one's rows."""

    def __init__(self, counter: _Counter, *, count_cql: str, sample_cql: str) -> None:
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
            rows = session().execute(prepare(self.sample_cql), (*params, SAMPLE_ROWS))
            mean, measured = mean_row_bytes(rows)
            if measured:
                return mean, True
        return assumed, False


@dataclass(frozen=True)
class _Window:
    """What the per-table readers share: the site, the window's peaks and the budget."""

    site_id: uuid.UUID
    shards: int
    start: datetime
    end: datetime
    peak: HourIngest | None  # most accepted events
    peak_requests: HourIngest | None  # most requests
    peak_rejected: int  # most rejected events in one hour
    counter: _Counter
    estimates: dict[str, TableEstimate]

    def partitions(self, *, count_cql: str, sample_cql: str) -> _Partitions:
        return _Partitions(self.counter, count_cql=count_cql, sample_cql=sample_cql)

    def size(
        self,
        table: str,
        partitions: _Partitions,
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
            buckets.recommend_width(writes_per_second=rate, row_bytes=row_bytes)
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
            estimate_bytes=buckets.span_bytes(
                writes_per_second=rate, row_bytes=row_bytes, span=duration
            ),
            largest=partitions.largest()[0],
            partitions_counted=len(partitions.counted),
            cassandra=self.estimates.get(table),
            recommendation=recommendation,
            note=note,
        )


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def _hour_span(hour: datetime, width: Width) -> list[datetime]:
    return buckets.buckets_between(hour, hour + timedelta(hours=1), width)


def partition_report(
    *, site_id: uuid.UUID, event_shards: int, now: datetime, hours: int = 24
) -> PartitionReport:
    """Return estimated and observed partition sizes of a site's tables over the last hours."""
    if not 1 <= hours <= MAX_WINDOW_HOURS:
        raise ValueError(f"hours: between 1 and {MAX_WINDOW_HOURS}, got {hours}")
    end = buckets.next_start(now, Width.HOUR)
    start = end - timedelta(hours=hours)
    ingest = ingest_hours(site_id=site_id, start=start, end=end)
    by_events = max(ingest, key=lambda h: (h.accepted, h.hour))
    by_requests = max(ingest, key=lambda h: (h.requests, h.hour))
    window = _Window(
        site_id=site_id,
        shards=max(1, event_shards),
        start=start,
        end=end,
        peak=by_events if by_events.accepted else None,
        peak_requests=by_requests if by_requests.requests else None,
        peak_rejected=max(h.rejected for h in ingest),
        counter=_Counter(ROW_BUDGET),
        estimates=size_estimates(),
    )
    site_events, users, sessions = _site_events(window)
    tables = [
        site_events,
        _user_events(window, users),
        _session_events(window, sessions),
        _transaction_log(window),
        _ingest_stats(window),
        _failed_events(window),
        _latest_sessions(window),
        _bucket_users(window),
    ]
    return PartitionReport(
        site_id=site_id,
        start=start,
        end=end,
        hours=ingest,
        peak=window.peak,
        tables=tables,
        estimates_found=bool(window.estimates),
        rows_counted=window.counter.total,
        budget_reached=window.counter.budget_reached,
    )


def _site_events(w: _Window) -> tuple[TableSize, list[tuple[str, float]], list[tuple[Any, float]]]:
    """Count the peak hour's shards; return the table and the heaviest users and sessions.

    Events spread evenly over shards (by event hash), so the first MAX_COUNTED
    shards stand for all, and per-user counts scale by shards / shards read.
    """
    users: Counter[str] = Counter()
    sessions: Counter[uuid.UUID] = Counter()

    def tally(row: Mapping[str, Any]) -> None:
        users[row["user_key"]] += 1
        sessions[row["session_id"]] += 1

    parts = w.partitions(count_cql=COUNT_SITE_EVENTS, sample_cql=SAMPLE_SITE_EVENTS)
    if w.peak is not None:
        for shard in range(min(w.shards, MAX_COUNTED)):
            key = f"bucket={_stamp(w.peak.hour)}, shard={shard}"
            parts.count((w.site_id, w.peak.hour, shard), key, tally)
    scale = w.shards / len(parts.counted) if parts.counted else 0.0
    site_rate = w.peak.accepted / 3600 if w.peak else 0.0
    table = w.size(
        "site_events_by_bucket",
        parts,
        partition_key="(site_id, bucket, shard)",
        span=f"hour, {w.shards} shard(s)",
        duration=timedelta(hours=1),
        width=Width.HOUR,
        rate=site_rate / w.shards,
        assumed_row_bytes=settings.SITE_EVENT_ROW_BYTES,
        note="",
    )
    needed = buckets.shards_for(
        writes_per_second=site_rate, row_bytes=table.row_bytes, width=Width.HOUR
    )
    note = (
        "The hour is fixed (sealing reads a site's hour): at the peak rate it needs "
        f"{needed} shard(s); the site has {w.shards}."
    )
    heaviest_users = [(k, n * scale) for k, n in users.most_common(TOP_KEYS)]
    heaviest_sessions = [(k, n * scale) for k, n in sessions.most_common(TOP_KEYS)]
    return replace(table, note=note), heaviest_users, heaviest_sessions


def _user_events(w: _Window, users: list[tuple[str, float]]) -> TableSize:
    """Count the heaviest users' partitions overlapping the peak hour."""
    width = buckets.parse_width(settings.USER_EVENTS_BUCKET)
    parts = w.partitions(count_cql=COUNT_USER_EVENTS, sample_cql=SAMPLE_USER_EVENTS)
    if w.peak is not None:
        for user_key, _ in users:
            for bucket in _hour_span(w.peak.hour, width):
                key = f"user_key={user_key}, bucket={_stamp(bucket)}"
                parts.count((w.site_id, user_key, bucket), key)
    return w.size(
        "user_events_by_bucket",
        parts,
        partition_key="(site_id, user_key, bucket)",
        span=buckets.WIDTH_LABELS[width],
        duration=buckets.nominal_duration(width),
        width=width,
        rate=users[0][1] / 3600 if users else 0.0,
        assumed_row_bytes=ASSUMED_ROW_BYTES["user_events_by_bucket"],
        note="Rate: the heaviest user of the peak hour, as if they kept that pace.",
    )


def _session_events(w: _Window, sessions: list[tuple[Any, float]]) -> TableSize:
    """Count the heaviest sessions of the peak hour; a session is capped in length."""
    parts = w.partitions(count_cql=COUNT_SESSION_EVENTS, sample_cql=SAMPLE_SESSION_EVENTS)
    for session_id, _ in sessions:
        parts.count((session_id,), f"session_id={session_id}")
    longest = settings.SESSION_MAX_DURATION
    return w.size(
        "session_events",
        parts,
        partition_key="(session_id)",
        span=f"one session (at most {longest.total_seconds() / 3600:g} h)",
        duration=longest,
        width=None,
        rate=sessions[0][1] / 3600 if sessions else 0.0,
        assumed_row_bytes=ASSUMED_ROW_BYTES["session_events"],
        note="Rate: the busiest session of the peak hour, kept up for the whole session cap.",
    )


def _transaction_log(w: _Window) -> TableSize:
    """Count every shard of the 10-minute buckets of the busiest hour by requests."""
    parts = w.partitions(count_cql=COUNT_TXLOG, sample_cql=SAMPLE_TXLOG)
    if w.peak_requests is not None:
        keys = [
            (minute, shard)
            for minute in _hour_span(w.peak_requests.hour, Width.TEN_MINUTES)
            for shard in range(settings.TXLOG_SHARDS)
        ]
        for minute, shard in keys[:MAX_COUNTED]:
            parts.count((w.site_id, minute, shard), f"minute={_stamp(minute)}, shard={shard}")
    shards = max(1, settings.TXLOG_SHARDS)
    return w.size(
        "transaction_log",
        parts,
        partition_key="(site_id, minute, shard)",
        span=f"10 min, {shards} shard(s)",
        duration=buckets.nominal_duration(Width.TEN_MINUTES),
        width=Width.TEN_MINUTES,
        rate=_request_rate(w) / shards,
        assumed_row_bytes=ASSUMED_ROW_BYTES["transaction_log"],
        note="One row per request that accepted events (rate: every request).",
    )


def _request_rate(w: _Window) -> float:
    return w.peak_requests.requests / 3600 if w.peak_requests else 0.0


def _ingest_stats(w: _Window) -> TableSize:
    """Count the busiest hour by requests."""
    parts = w.partitions(count_cql=COUNT_INGEST, sample_cql=SAMPLE_INGEST)
    if w.peak_requests is not None:
        hour = w.peak_requests.hour
        parts.count((w.site_id, hour), f"bucket={_stamp(hour)}")
    return w.size(
        "ingest_stats",
        parts,
        partition_key="(site_id, bucket)",
        span="hour",
        duration=timedelta(hours=1),
        width=Width.HOUR,
        rate=_request_rate(w),
        assumed_row_bytes=ASSUMED_ROW_BYTES["ingest_stats"],
        note="One row per request.",
    )


def _failed_events(w: _Window) -> TableSize:
    """Count every day of the window."""
    parts = w.partitions(count_cql=COUNT_FAILED, sample_cql=SAMPLE_FAILED)
    for day in buckets.buckets_between(w.start, w.end, Width.DAY):
        parts.count((w.site_id, day), f"day={day.date().isoformat()}")
    return w.size(
        "failed_events",
        parts,
        partition_key="(site_id, day)",
        span="day",
        duration=timedelta(days=1),
        width=Width.DAY,
        rate=w.peak_rejected / 3600,
        assumed_row_bytes=ASSUMED_ROW_BYTES["failed_events"],
        note="One row per rejected event (rate: the hour with the most rejections).",
    )


def _bucket_users(w: _Window) -> TableSize:
    """Count the peak hour's per-user counts (written when that hour was sealed)."""
    parts = w.partitions(count_cql=COUNT_BUCKET_USERS, sample_cql=SAMPLE_BUCKET_USERS)
    if w.peak is not None:
        hour = w.peak.hour
        parts.count((w.site_id, "hour", hour), f"hour bucket={_stamp(hour)}")
    return w.size(
        "bucket_users",
        parts,
        partition_key="(site_id, granularity, bucket)",
        span="hour",
        duration=timedelta(hours=1),
        width=Width.HOUR,
        rate=w.peak.accepted / 3600 if w.peak is not None else 0.0,
        assumed_row_bytes=ASSUMED_ROW_BYTES["bucket_users"],
        note=(
            "One row per user of a sealed hour (a map of its event keys' counts): at most "
            "one per event, so the estimate is an upper bound; days and months hold their "
            "children's users."
        ),
    )


def _latest_sessions(w: _Window) -> TableSize:
    """Count every sentinel; rows live for the TTL rather than a bucket."""
    parts = w.partitions(count_cql=COUNT_FEED, sample_cql=SAMPLE_FEED)
    for sentinel in range(settings.FEED_SHARDS):
        parts.count((w.site_id, sentinel), f"sentinel={sentinel}")
    sentinels = max(1, settings.FEED_SHARDS)
    return w.size(
        "latest_sessions",
        parts,
        partition_key="(site_id, sentinel)",
        span=f"1-day TTL, {sentinels} sentinels",
        duration=LATEST_SESSIONS_TTL,
        width=None,
        rate=_request_rate(w) / sentinels,
        assumed_row_bytes=ASSUMED_ROW_BYTES["latest_sessions"],
        note="About one row per request and session, kept for the TTL.",
    )
