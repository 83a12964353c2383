"""Seal an hour: count it once from its tallies or raw rows and write every aggregate of it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import F

from sessions_app.aggregates import (
    breakdowns,
    heatmap_rows,
    heatmaps,
    paths,
    series,
    sources,
    tally,
)
from sessions_app.core import timebuckets
from sessions_app.core.batches import replica_batches
from sessions_app.core.cql import execute_windowed, prepare
from sessions_app.ledger import policies
from sessions_app.ledger.widths import user_widths_adapt
from sessions_app.models import (
    BucketState,
)
from sessions_app.tables import bucket_aggregates, bucket_users, retention_specs, rolling_counts

# Resolutions and what each is built from: hours from raw events, days from sealed
# hours, months from sealed days (multi-resolution buckets).
ROLLUP_CHAIN = ("hour", "day", "month")
CHILD = {"day": "hour", "month": "day"}
EVENT_TYPES = ("pageview", "click", "custom")

# Users (one row and map each) per unlogged batch of a bucket's bucket_users rows.
COUNT_BATCH_USERS = 100


def aggregate_ttl(granularity: str) -> int:
    return policies.ttl_seconds(retention_specs.aggregate_key(granularity))


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


def aggregates_write(
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    result: tally.Aggregates,
    now: datetime,
    *,
    counts: bool = True,
) -> None:
    """Overwrite a bucket's aggregate row, series points and (unless `counts` is
    False: written already) its per-user counts, all in one window.

    Every value is computed, never added, so a second or concurrent seal writes
    the same cells.
    """
    ttl = aggregate_ttl(granularity)
    work: list[tuple[Any, Any]] = [
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
    if counts:
        work.extend(_user_counts_work(site_id, granularity, bucket, result.user_counts, ttl))
    execute_windowed(work)
    series.points_write(metric_points(site_id, granularity, bucket, result), ttl=ttl)


UserCounts = dict[tuple[str, str], int]  # (user key, event key) -> events


def _user_counts_work(
    site_id: uuid.UUID, granularity: str, bucket: datetime, user_counts: UserCounts, ttl: int
) -> list[tuple[Any, None]]:
    """The writes that overwrite a bucket's per-user counts in both tables.

    bucket_users (site partition, what the parent's rollup reads) and
    rolling_counts (user partition, what the rolling-counter reads use). Binding
    needs no Django database (ttl comes in), so a seal runs it on pool threads.
    """
    return _site_counts_work(site_id, granularity, bucket, user_counts, ttl) + _rolling_counts_work(
        site_id, granularity, bucket, user_counts, ttl
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


def bucket_seal(*, site_id: uuid.UUID | str, hour: datetime, now: datetime) -> bool:
    """Compute and overwrite one hour's aggregates, then mark it sealed; idempotent.

    Merges the tallies the applier wrote beside each batch of the hour (one row per
    batch instead of one per event), or, when the hour is not covered by tallies
    (BucketState.partials off, or none written), streams the hour's raw rows from
    every shard. Then it reads the summaries of the sessions that started in the
    hour, writes everything, then flips the state only if no late event (or
    erasure) bumped its version meanwhile. Returns False in that case (the bucket
    stays reopened and the next sweep seals it again).
    """
    hour = timebuckets.floor(hour, timebuckets.Width.HOUR)
    state = BucketState.objects.select_related("site").get(
        site_id=site_id, granularity="hour", bucket=hour
    )
    version = state.version
    site = state.site
    end = timebuckets.next_start(hour, timebuckets.Width.HOUR)
    # Every shard the hour was ever written with, whatever the site uses now.
    counted = (
        sources.bucket_partials(site_id=site.id, hour=hour, shards=state.shards)
        if state.partials
        else None
    )
    if counted is None:  # no tallies cover the hour: its raw rows do
        rows = sources.site_bucket_rows(site_id=site.id, hour=hour, shards=state.shards)
        counted = tally.tally(rows)
    result, spans = tally.finish(counted, conversion_event=settings.CONVERSION_EVENT)

    # The per-user counts need no session summaries. Each table's are bound and
    # written on a thread of their own meanwhile, so the node has the first batches
    # and the summary reads to serve while the rest are bound. The threads touch
    # Cassandra only: the TTL (a retention policy, in SQL) is read here.
    ttl = aggregate_ttl("hour")

    def counts_write(work: Callable[..., list[tuple[Any, None]]]) -> None:
        execute_windowed(work(site.id, "hour", hour, result.user_counts, ttl))

    with ThreadPoolExecutor(2, thread_name_prefix="seal-counts") as pool:
        counts = [pool.submit(counts_write, w) for w in (_site_counts_work, _rolling_counts_work)]
        sessions = sources.session_summaries(site_id=site.id, start=hour, end=end, spans=spans)
        tally.count_sessions(result, sessions, start=hour, end=end)
        # Nothing reads a bucket's rows as sealed before its state says so (below).
        aggregates_write(site.id, "hour", hour, result, now, counts=False)
        started = breakdowns.hour_rows(site_id=site.id, hour=hour)
        counted_dims = breakdowns.breakdown_count(started)
        breakdowns.breakdown_write(
            site_id=site.id,
            granularity="hour",
            bucket=hour,
            breakdown=counted_dims,
            ttl=ttl,
            now=now,
        )
        paths.paths_write(
            site_id=site.id,
            granularity="hour",
            bucket=hour,
            stored=paths.stored_of(
                paths.hour_count(site_id=site.id, hour=hour, views=counted.views, started=started)
            ),
            ttl=ttl,
            now=now,
        )
        heatmap_rows.heat_write(
            site_id=site.id,
            granularity="hour",
            bucket=hour,
            stored=heatmaps.stored_of(counted.heat),
            ttl=ttl,
            now=now,
        )
        user_widths_adapt(site=site, hour_counts=result.user_counts, now=now)
        for written in counts:
            written.result()
    BucketState.objects.get_or_create(
        site=site, granularity="day", bucket=timebuckets.floor(hour, "day")
    )
    updated = BucketState.objects.filter(pk=state.pk, version=version).update(
        state=BucketState.SEALED, seals=F("seals") + 1, sealed_at=now
    )
    return bool(updated)
