"""A user's events across time buckets, paged by a cursor (IN, parallel or sequential reads)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from sessions_app.domain.ledger.widths import user_partitions
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.bounds import (
    MAX_RANGE_BUCKETS,
    RangeError,
    bounded_limit,
    checked_range,
    checked_time_uuid,
)
from sessions_app.foundation.core.cql import bind, cassandra_session, prepare
from sessions_app.foundation.core.eventdoc import event_row
from sessions_app.foundation.core.ids import time_uuid_bound, uuid_time
from sessions_app.foundation.tables import user_events_by_bucket


@dataclass(frozen=True)
class ActivityPage:
    """One page of a user's events across buckets, and how they were read."""

    events: list[dict[str, Any]]
    next_cursor: uuid.UUID | None
    strategy: str
    partitions: list[dict[str, Any]]
    queries: int = 0  # statements sent to Cassandra


def user_activity(
    *,
    site_id: uuid.UUID,
    user_key: str,
    start: datetime,
    end: datetime,
    limit: int = 100,
    cursor: uuid.UUID | None = None,
    strategy: str | None = None,
) -> ActivityPage:
    """Return a user's events in [start, end) in time order, `limit` at a time.

    The cursor is the last event id of the previous page: the next page starts
    right after it, in its bucket and the ones after, so pages never skip or
    repeat an event at a bucket boundary. Few buckets are read with one IN query
    (PER PARTITION LIMIT, merged here); more with parallel queries in windows, each
    an IN list of a few consecutive buckets: every query has a fixed CPU cost in
    Cassandra and in the driver, and on a small node that CPU, not waiting, is
    what parallel queries have to hide.
    """
    limit = bounded_limit(limit)
    start, end = checked_range(start, end)
    cursor = checked_time_uuid(cursor, "cursor")
    first = max(start, uuid_time(cursor)) if cursor else start
    try:
        partitions = user_partitions(
            site_id=site_id, user_key=user_key, start=first, end=end, limit=MAX_RANGE_BUCKETS
        )
    except timebuckets.BucketRangeError:  # a super-active user's hour buckets
        raise RangeError("end", f"more than {MAX_RANGE_BUCKETS} partitions; narrow it") from None
    low = cursor or time_uuid_bound(start - timedelta(microseconds=1), upper=True)
    chosen = _strategy(strategy, len(partitions))
    chunks, window = activity_chunks(partitions, chosen)
    bounds = (site_id, user_key, low, time_uuid_bound(end), limit + 1)
    events, read, queries = _chunks_read(chunks, window, bounds)
    page = events[:limit]
    next_cursor = page[-1]["event_id"] if len(events) > limit else None
    return ActivityPage(page, next_cursor, chosen, read, queries)


def _strategy(strategy: str | None, buckets: int) -> str:
    """The read strategy asked for (or ACTIVITY_READ_STRATEGY), "auto" resolved by size."""
    chosen = strategy or settings.ACTIVITY_READ_STRATEGY
    if chosen == "auto":
        chosen = "in" if buckets <= settings.ACTIVITY_IN_MAX_BUCKETS else "parallel"
    if chosen not in ("in", "parallel", "sequential"):
        raise RangeError("strategy", "one of auto, in, parallel, sequential")
    if chosen == "in" and buckets > settings.ACTIVITY_IN_MAX_BUCKETS:
        raise RangeError("strategy", f"IN reads at most {settings.ACTIVITY_IN_MAX_BUCKETS} buckets")
    return chosen


def _chunks_read(
    chunks: list[list[datetime]], window: int, bounds: tuple[Any, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Read chunks `window` at a time until more than the page is found.

    `bounds` is (site id, user key, low, high, rows per query). Returns the events in
    time order, the rows read per bucket, and the number of queries.
    """
    site_id, user_key, low, high, rows = bounds
    one = prepare(user_events_by_bucket.SELECT_AFTER)
    several = prepare(user_events_by_bucket.SELECT_IN_AFTER)
    db = cassandra_session()
    read: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    queries = 0
    for offset in range(0, len(chunks), window):
        batch = chunks[offset : offset + window]
        futures = [
            db.execute_async(
                bind(one, (site_id, user_key, chunk[0], low, high, rows))
                if len(chunk) == 1
                else bind(several, (site_id, user_key, chunk, low, high, rows))
            )
            for chunk in batch
        ]
        queries += len(futures)
        # Chunks hold consecutive buckets, which hold disjoint time ranges: each
        # chunk's rows in time order, chunk after chunk, are the range in time order.
        for chunk, future in zip(batch, futures, strict=True):
            found, per_bucket = _bucket_rows(future.result(), chunk)
            read.extend({"bucket": b, "rows": n} for b, n in per_bucket.items())
            events.extend(found)
        if len(events) > rows - 1:
            break
    return events, read, queries


def activity_chunks(partitions: list[datetime], strategy: str) -> tuple[list[list[datetime]], int]:
    """Return the buckets each query of a strategy reads, and how many queries go at once."""
    if strategy == "in":
        return ([partitions] if partitions else []), 1
    if strategy == "sequential":
        return [[b] for b in partitions], 1
    # parallel: a few consecutive buckets a query, many queries at once
    size = max(1, min(settings.ACTIVITY_PARALLEL_IN_BUCKETS, settings.ACTIVITY_IN_MAX_BUCKETS))
    chunks = [partitions[i : i + size] for i in range(0, len(partitions), size)]
    return chunks, settings.ACTIVITY_PARALLEL_WINDOW


def _bucket_rows(
    rows: Iterable[dict[str, Any]], chunk: list[datetime]
) -> tuple[list[dict[str, Any]], dict[datetime, int]]:
    """One query's rows in time order, and how many each of its buckets held.

    A partition's rows come in clustering order (event id: time), and the
    chunk's buckets are consecutive and disjoint in time, so the rows grouped by
    bucket, group after group in the chunk's order, are in time order, whatever
    order an IN list's partitions arrive in (no part of the protocol promises
    one). No sort: Cassandra's own order is the one the cursor (event_id > ?) uses.
    """
    if len(chunk) == 1:
        found = [event_row(row) for row in rows]
        return found, {chunk[0]: len(found)}
    # Keyed by the driver's value (naive UTC): no conversion per row.
    groups: dict[datetime, list[dict[str, Any]]] = {timebuckets.as_driver(b): [] for b in chunk}
    for row in rows:
        groups[row.pop("bucket")].append(event_row(row))
    found = [event for group in groups.values() for event in group]
    return found, {b: len(group) for b, group in zip(chunk, groups.values(), strict=True)}
