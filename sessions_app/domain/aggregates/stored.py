"""Reads of sealed aggregates: bucket rows, ranges of them, and per-user counts."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import orjson

from sessions_app.domain.aggregates import totals
from sessions_app.foundation.core import stamps, timebuckets
from sessions_app.foundation.core.cql import (
    cassandra_session,
    execute_windowed,
    prepare,
    read_begin,
)
from sessions_app.foundation.tables import bucket_aggregates, bucket_users

MAX_AGGREGATE_ROWS = 2_000  # a 92-day range of hours is 2,208 rows: read hours ≤ 83 days


def aggregate_of(row: dict[str, Any]) -> totals.Aggregates:
    """Return a bucket_aggregates row as the aggregates it holds."""
    return totals.Aggregates(
        events=row["events"] or 0,
        by_type=dict(row["by_type"] or {}),
        by_name=dict(row["by_name"] or {}),
        sessions_started=row["sessions_started"] or 0,
        users=row["users"] or 0,
        bounces=row["bounces"] or 0,
        conversions=row["conversions"] or 0,
        durations=dict(row["durations"] or {}),
        top_pages=[tuple(p) for p in orjson.loads(row["top_pages"] or "[]")],
        top_clicks=[tuple(c) for c in orjson.loads(row["top_clicks"] or "[]")],
        rows_read=row["rows_read"] or 0,
        users_sketch=row["users_sketch"] or b"",
        visits=row["visits"] or 0,
        one_page_visits=row["one_page_visits"] or 0,
        converted_visits=row["converted_visits"] or 0,
        duration_sum=row["duration_sum"] or 0,
        duration_slots=dict(row["duration_slots"] or {}),
    )


def aggregates_range(
    *, site_id: uuid.UUID, granularity: str, start: datetime, end: datetime
) -> list[tuple[datetime, totals.Aggregates]]:
    """Return the stored aggregates of a site's buckets in [start, end), in time order.

    One slice of the (site, granularity) partition. A row exists once the bucket
    was sealed; whether it is still current is BucketState's business.
    """
    rows = cassandra_session().execute(
        prepare(bucket_aggregates.SELECT_RANGE),
        (
            site_id,
            granularity,
            timebuckets.as_utc(start),
            timebuckets.as_utc(end),
            MAX_AGGREGATE_ROWS,
        ),
    )
    return [(timebuckets.from_driver(row["bucket"]), aggregate_of(row)) for row in rows]


def aggregates_ranges(
    *, site_id: uuid.UUID, runs: list[tuple[str, datetime, datetime]]
) -> Callable[[], list[list[tuple[datetime, totals.Aggregates]]]]:
    """Start reading the stored aggregates of several (granularity, start, end) slices at
    once (each at most MAX_AGGREGATE_ROWS rows); the returned call waits and parses them,
    each slice in time order."""
    params = [
        (site_id, g, timebuckets.as_utc(low), timebuckets.as_utc(high), MAX_AGGREGATE_ROWS)
        for g, low, high in runs
    ]
    pending = read_begin(prepare(bucket_aggregates.SELECT_RANGE), params)
    return lambda: [
        [(timebuckets.from_driver(row["bucket"]), aggregate_of(row)) for row in rows]
        for rows in pending()
    ]


def bucket_user_counts(
    *, site_id: uuid.UUID, granularity: str, bucket_starts: list[datetime]
) -> dict[str, dict[str, int]]:
    """Return the summed counts of a site's sealed buckets, {user: {event key: events}}.

    Reads one bucket_users partition per bucket (24 for a day, about 30 for a
    month), in parallel, paging through each.
    """
    statement = prepare(bucket_users.SELECT_COUNTS)
    parts: list[dict[str, dict[str, int]]] = []
    for chunk in _chunks(bucket_starts, 32):
        futures = [
            cassandra_session().execute_async(statement, (site_id, granularity, b)) for b in chunk
        ]
        parts += [
            {row["user_key"]: dict(row["counts"]) for row in future.result()} for future in futures
        ]
    return user_counts_add(parts)


def user_counts_add(parts: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """{user: {event key: events}} summed over parts (none: empty); one part as it is."""
    if len(parts) == 1:
        return parts[0]
    summed: dict[str, dict[str, int]] = {}
    for part in parts:
        for user, counts in part.items():
            held = summed.get(user)
            if held is None:
                summed[user] = dict(counts)
                continue
            for key, n in counts.items():
                held[key] = held.get(key, 0) + n
    return summed


def _chunks(items: list[datetime], size: int) -> Iterator[list[datetime]]:
    for offset in range(0, len(items), size):
        yield items[offset : offset + size]


def bucket_overwrite(
    *,
    delete: str,
    key: tuple[Any, ...],
    insert: str,
    rows: Iterable[tuple[Any, ...]],
    now: datetime,
    ttl: int,
    apart: tuple[str, Iterable[tuple[tuple[Any, ...], int]]] | None = None,
) -> None:
    """Replace a stored bucket's rows: `delete` (USING TIMESTAMP ?, then `key`) written
    just below the rows' timestamp clears what a reseal no longer has, in any order with
    them; each of `rows` is bound with the timestamp and the TTL after it, and so is each
    (values, its own TTL) of `apart`'s insert. The timestamp is `now`, at most the clock's
    ceiling (foundation/core/stamps.py): an erasure's reseal, stamped later, replaces the rows."""
    written = min(timebuckets.epoch_us(now), stamps.ceiling_us(stamps.now_us()))
    work: list[tuple[Any, Any]] = [
        (prepare(delete, idempotent=True, write=True), (written - 1, *key))
    ]
    statement = prepare(insert, idempotent=True, write=True)
    work.extend((statement, (*row, written, ttl)) for row in rows)
    if apart is not None:
        other = prepare(apart[0], idempotent=True, write=True)
        work.extend((other, (*row, written, own)) for row, own in apart[1])
    execute_windowed(work)
