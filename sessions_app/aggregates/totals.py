"""Writes of the totals and per-user counts products: bucket_aggregates, series_points,
bucket_users and rolling_counts (aggregates/products.py).

Every value is computed, never added, so a second or concurrent seal writes the same cells.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from sessions_app.aggregates import series, tally
from sessions_app.core import timebuckets
from sessions_app.core.batches import replica_batches
from sessions_app.core.cql import execute_windowed, prepare
from sessions_app.tables import bucket_aggregates, bucket_users, rolling_counts

EVENT_TYPES = ("pageview", "click", "custom")
# Users (one row and map each) per unlogged batch of a bucket's bucket_users rows.
COUNT_BATCH_USERS = 100

UserCounts = dict[tuple[str, str], int]  # (user key, event key) -> events


def metric_points(
    site_id: object, granularity: str, bucket: datetime, result: tally.Aggregates
) -> list[tuple[str, datetime, float]]:
    """Return the series points of one bucket (series keys: metric + sorted tags)."""
    values: dict[str, float] = {
        "events": result.events,
        "sessions_started": result.sessions_started,
        "users": result.users,
        "bounces": result.bounces,
        "conversions": result.conversions,
    }
    for kind in EVENT_TYPES:
        values[f"events:{kind}"] = result.by_type.get(kind, 0)
    tags = {"resolution": granularity, "site": str(site_id)}
    return [
        (
            series.series_key(
                name.split(":")[0],
                {**tags, **({"type": name.split(":")[1]} if ":" in name else {})},
            ),
            bucket,
            value,
        )
        for name, value in values.items()
    ]


def totals_write(
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    result: tally.Aggregates,
    *,
    now: datetime,
    ttl: int,
) -> None:
    """Overwrite a bucket's aggregate row and its series points."""
    execute_windowed(
        [
            (
                prepare(bucket_aggregates.UPSERT, idempotent=True, write=True),
                (
                    site_id,
                    granularity,
                    bucket,
                    result.events,
                    result.by_type,
                    result.by_name,
                    result.sessions_started,
                    result.users,
                    result.bounces,
                    result.conversions,
                    result.durations,
                    json.dumps(result.top_pages),
                    json.dumps(result.top_clicks),
                    result.rows_read,
                    timebuckets.as_utc(now),
                    result.users_sketch,
                    ttl,
                ),
            )
        ]
    )
    series.points_write(metric_points(site_id, granularity, bucket, result), ttl=ttl)


def user_counts_write(
    site_id: uuid.UUID, granularity: str, bucket: datetime, user_counts: UserCounts, *, ttl: int
) -> None:
    """Overwrite a bucket's per-user counts in both tables: bucket_users (site partition,
    what the parent's rollup reads) and rolling_counts (user partition, what the
    rolling-counter reads use). No SQL (the TTL comes in): a seal runs it on a thread."""
    execute_windowed(
        _site_counts_work(site_id, granularity, bucket, user_counts, ttl)
        + _rolling_counts_work(site_id, granularity, bucket, user_counts, ttl)
    )


def _site_counts_work(
    site_id: uuid.UUID, granularity: str, bucket: datetime, user_counts: UserCounts, ttl: int
) -> list[tuple[Any, None]]:
    """bucket_users' rows: one partition, a row (and map) per user, overwritten whole;
    COUNT_BATCH_USERS rows an unlogged batch."""
    by_user: dict[str, dict[str, int]] = {}
    for (user, key), n in user_counts.items():
        counts = by_user.get(user)
        if counts is None:
            counts = by_user[user] = {}
        counts[key] = n
    rows = [(site_id, granularity, bucket, user, counts, ttl) for user, counts in by_user.items()]
    return replica_batches(
        prepare(bucket_users.UPSERT, idempotent=True, write=True),
        (
            rows[offset : offset + COUNT_BATCH_USERS]
            for offset in range(0, len(rows), COUNT_BATCH_USERS)
        ),
        partitions_per_batch=1,
        rows_per_batch=COUNT_BATCH_USERS,
    )


def _rolling_counts_work(
    site_id: uuid.UUID, granularity: str, bucket: datetime, user_counts: UserCounts, ttl: int
) -> list[tuple[Any, None]]:
    """rolling_counts' rows: a partition per user, up to 10 that share their replicas a
    batch (batches.replica_batches)."""
    period = timebuckets.rolling_period(granularity, bucket)
    by_user: dict[str, list[tuple[Any, ...]]] = {}
    for (user, key), n in user_counts.items():
        by_user.setdefault(user, []).append(
            (site_id, user, granularity, period, key, bucket, n, ttl)
        )
    return replica_batches(
        prepare(rolling_counts.UPSERT, idempotent=True, write=True), by_user.values()
    )
