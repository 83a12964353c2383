"""The totals product (domain/aggregates/products.py): a bucket's events, sessions, users, top
pages and clicks, durations, from its tally and its sessions' summaries (bots excluded),
merged into days and months; written with its series points. Also the per-user counts'
writes (bucket_users, rolling_counts).

Every value is computed, never added, so a second or concurrent seal writes the same cells.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sessions_app.domain.aggregates import series, tally
from sessions_app.domain.aggregates.kpis import Kpis, duration_slot, slots_median, slots_merge
from sessions_app.domain.aggregates.sketch import sketch_estimate, sketch_merge, sketch_of
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.batches import replica_batches
from sessions_app.foundation.core.cql import execute_windowed, prepare
from sessions_app.foundation.tables import bucket_aggregates, bucket_users, rolling_counts

EVENT_TYPES = ("pageview", "click", "custom")
# Users (one row and map each) per unlogged batch of a bucket's bucket_users rows.
COUNT_BATCH_USERS = 100

UserCounts = dict[str, dict[str, int]]  # user key -> event key -> events

DURATION_BINS = [
    ("0-10s", timedelta(seconds=10)),
    ("10-60s", timedelta(minutes=1)),
    ("1-3m", timedelta(minutes=3)),
    ("3-10m", timedelta(minutes=10)),
    ("10-30m", timedelta(minutes=30)),
    ("30m+", timedelta.max),
]

TOP_N = 20


@dataclass
class Aggregates:
    events: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_name: dict[str, int] = field(default_factory=dict)
    sessions_started: int = 0
    users: int = 0
    bounces: int = 0
    conversions: int = 0  # the visits that reached a goal (converted_visits, by its API name)
    durations: dict[str, int] = field(default_factory=dict)
    top_pages: list[tuple[str, int]] = field(default_factory=list)
    top_clicks: list[tuple[str, int]] = field(default_factory=list)
    rows_read: int = 0
    users_sketch: bytes = b""
    # The KPIs' visit counters (count_started): human sessions started in the bucket as
    # their site_sessions rows stand, one-page visits, converted visits, durations.
    visits: int = 0
    one_page_visits: int = 0
    converted_visits: int = 0
    duration_sum: int = 0  # whole seconds
    duration_slots: dict[int, int] = field(default_factory=dict)  # kpis.duration_slot -> visits


def duration_bin(duration: timedelta) -> str:
    """Return the histogram bin of a session duration."""
    for name, upper in DURATION_BINS:
        if duration < upper:
            return name
    return DURATION_BINS[-1][0]


def _top(counts: Counter[str], top: int = TOP_N) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def finish(counted: tally.Tally) -> Aggregates:
    """Turn a tally into a bucket's event aggregates (sessions are added by count_sessions)."""
    result = Aggregates()
    users = counted.humans
    result.rows_read = counted.rows
    result.events = sum(counted.by_type.values())
    result.by_type, result.by_name = dict(counted.by_type), dict(counted.by_name)
    result.users = len(users)
    result.users_sketch = sketch_of(users)
    result.top_pages = _top(counted.pages)
    result.top_clicks = _top(counted.clicks)
    return result


def count_started(result: Aggregates, started: list[dict[str, Any]]) -> None:
    """Add the human sessions that started in the bucket, from their site_sessions rows
    (`sources.Hour.started`: the hour's slice of its day's partitions, so every row's
    session began in it; bots left out), in one pass: sessions, bounces and duration bins
    (a session's whole span, not just this bucket), and the KPIs' visit counters."""
    durations: Counter[str] = Counter()
    slots: Counter[int] = Counter()
    for row in started:
        if row["is_bot"]:
            continue
        pageviews = row["pageview_count"] or 0
        result.sessions_started += 1
        if pageviews <= 1 and (row["event_count"] or 0) <= 1:
            result.bounces += 1
        durations[duration_bin(row["last_seen_at"] - row["started_at"])] += 1
        result.visits += 1
        result.one_page_visits += pageviews <= 1
        result.converted_visits += bool(row["converted"])
        result.conversions += bool(row["converted"])
        duration = row["duration_s"] or 0
        result.duration_sum += duration
        slots[duration_slot(duration)] += 1
    result.durations = dict(durations)
    result.duration_slots = dict(slots)


def kpis_of(result: Aggregates) -> Kpis:
    """Return the KPIs of a bucket or a merge of buckets."""
    return Kpis(
        visitors=result.users,
        visits=result.visits,
        pageviews=result.by_type.get("pageview", 0),
        bounces=result.one_page_visits,
        duration_seconds_sum=float(result.duration_sum),
        duration_median=slots_median(result.duration_slots),
        conversions=result.converted_visits,
    )


def aggregates_merge(parts: list[Aggregates]) -> Aggregates:
    """Combine the aggregates of adjacent buckets into their parent's (a day, a month).

    Counts add up; unique users come from the merged sketches (an estimate when
    more than one bucket had users); top lists are the top of the children's
    top lists, so a page that never made any child's top N is not counted.
    """
    if len(parts) == 1:
        return parts[0]
    result = Aggregates()
    by_type: Counter[str] = Counter()
    by_name: Counter[str] = Counter()
    durations: Counter[str] = Counter()
    pages: Counter[str] = Counter()
    clicks: Counter[str] = Counter()
    for part in parts:
        result.events += part.events
        result.rows_read += part.rows_read
        result.sessions_started += part.sessions_started
        result.bounces += part.bounces
        result.conversions += part.conversions
        result.visits += part.visits
        result.one_page_visits += part.one_page_visits
        result.converted_visits += part.converted_visits
        result.duration_sum += part.duration_sum
        by_type.update(part.by_type)
        by_name.update(part.by_name)
        durations.update(part.durations)
        pages.update(dict(part.top_pages))
        clicks.update(dict(part.top_clicks))
    result.by_type, result.by_name, result.durations = dict(by_type), dict(by_name), dict(durations)
    result.top_pages, result.top_clicks = _top(pages), _top(clicks)
    result.duration_slots = slots_merge(p.duration_slots for p in parts)
    with_users = [p for p in parts if p.users]
    if len(with_users) == 1:
        result.users, result.users_sketch = with_users[0].users, with_users[0].users_sketch
    elif with_users:
        result.users_sketch = sketch_merge(p.users_sketch for p in with_users)
        result.users = sketch_estimate(result.users_sketch)
    return result


def metric_points(
    site_id: object, granularity: str, bucket: datetime, result: Aggregates
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
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: Aggregates,
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's aggregate row and its series points."""
    result = value
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
                    result.visits,
                    result.one_page_visits,
                    result.converted_visits,
                    result.duration_sum,
                    result.duration_slots,
                    ttl,
                ),
            )
        ]
    )
    series.points_write(metric_points(site_id, granularity, bucket, result), ttl=ttl)


def user_counts_write(
    *,
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    value: UserCounts,
    ttl: int,
    now: datetime,
) -> None:
    """Overwrite a bucket's per-user counts in both tables, one row and map a user in
    each: bucket_users (site partition, what the parent's rollup reads) and rolling_counts
    (user partition, what the rolling-counter reads use), one table after the other (on
    two threads they took turns at the GIL and took longer). No SQL (the TTL comes in).
    `now` is not used: these rows are written at the driver's time."""
    for work in (_site_counts_work, _rolling_counts_work):
        execute_windowed(work(site_id, granularity, bucket, value, ttl))


def _site_counts_work(
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    by_user: UserCounts,
    ttl: int,
) -> list[tuple[Any, None]]:
    """bucket_users' rows: one partition, a row (and map) per user, overwritten whole;
    COUNT_BATCH_USERS rows an unlogged batch."""
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
    site_id: uuid.UUID,
    granularity: str,
    bucket: datetime,
    by_user: UserCounts,
    ttl: int,
) -> list[tuple[Any, None]]:
    """rolling_counts' rows: a partition per user, one row (and map) a user, up to 10
    partitions that share their replicas a batch (batches.replica_batches)."""
    period = timebuckets.rolling_period(granularity, bucket)
    return replica_batches(
        prepare(rolling_counts.UPSERT, idempotent=True, write=True),
        (
            [
                rolling_counts.upsert_params(
                    site_id=site_id,
                    user_key=user,
                    granularity=granularity,
                    period=period,
                    bucket=bucket,
                    counts=counts,
                    ttl=ttl,
                )
            ]
            for user, counts in by_user.items()
        ),
    )
