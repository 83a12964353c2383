"""One probe per table: which partitions of a window to count, and their rows' size."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.conf import settings

from sessions_app.core import timebuckets
from sessions_app.core.timebuckets import Width
from sessions_app.partitions import sizing
from sessions_app.partitions.counting import (
    ASSUMED_ROW_BYTES,
    LATEST_SESSIONS_TTL,
    MAX_COUNTED,
    TOP_KEYS,
    TableSize,
    Window,
    hour_span,
    stamp,
)

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
SELECT event_id, site_id, user_key, ts, doc FROM {ks}.session_events WHERE session_id = ? LIMIT ?
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


def probe_site_events(
    w: Window,
) -> tuple[TableSize, list[tuple[str, float]], list[tuple[Any, float]]]:
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
            key = f"bucket={stamp(w.peak.hour)}, shard={shard}"
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
    needed = sizing.shards_for(
        writes_per_second=site_rate, row_bytes=table.row_bytes, width=Width.HOUR
    )
    note = (
        "The hour is fixed (sealing reads a site's hour): at the peak rate it needs "
        f"{needed} shard(s); the site has {w.shards}."
    )
    heaviest_users = [(k, n * scale) for k, n in users.most_common(TOP_KEYS)]
    heaviest_sessions = [(k, n * scale) for k, n in sessions.most_common(TOP_KEYS)]
    return replace(table, note=note), heaviest_users, heaviest_sessions


def probe_user_events(w: Window, users: list[tuple[str, float]]) -> TableSize:
    """Count the heaviest users' partitions overlapping the peak hour."""
    width = timebuckets.parse_width(settings.USER_EVENTS_BUCKET)
    parts = w.partitions(count_cql=COUNT_USER_EVENTS, sample_cql=SAMPLE_USER_EVENTS)
    if w.peak is not None:
        for user_key, _ in users:
            for bucket in hour_span(w.peak.hour, width):
                key = f"user_key={user_key}, bucket={stamp(bucket)}"
                parts.count((w.site_id, user_key, bucket), key)
    return w.size(
        "user_events_by_bucket",
        parts,
        partition_key="(site_id, user_key, bucket)",
        span=sizing.WIDTH_LABELS[width],
        duration=timebuckets.nominal_duration(width),
        width=width,
        rate=users[0][1] / 3600 if users else 0.0,
        assumed_row_bytes=ASSUMED_ROW_BYTES["user_events_by_bucket"],
        note="Rate: the heaviest user of the peak hour, as if they kept that pace.",
    )


def probe_session_events(w: Window, sessions: list[tuple[Any, float]]) -> TableSize:
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


def probe_transaction_log(w: Window) -> TableSize:
    """Count every shard of the 10-minute buckets of the busiest hour by requests."""
    parts = w.partitions(count_cql=COUNT_TXLOG, sample_cql=SAMPLE_TXLOG)
    if w.peak_requests is not None:
        keys = [
            (minute, shard)
            for minute in hour_span(w.peak_requests.hour, Width.TEN_MINUTES)
            for shard in range(settings.TXLOG_SHARDS)
        ]
        for minute, shard in keys[:MAX_COUNTED]:
            parts.count((w.site_id, minute, shard), f"minute={stamp(minute)}, shard={shard}")
    shards = max(1, settings.TXLOG_SHARDS)
    return w.size(
        "transaction_log",
        parts,
        partition_key="(site_id, minute, shard)",
        span=f"10 min, {shards} shard(s)",
        duration=timebuckets.nominal_duration(Width.TEN_MINUTES),
        width=Width.TEN_MINUTES,
        rate=_request_rate(w) / shards,
        assumed_row_bytes=ASSUMED_ROW_BYTES["transaction_log"],
        note="One row per request that accepted events (rate: every request).",
    )


def _request_rate(w: Window) -> float:
    return w.peak_requests.requests / 3600 if w.peak_requests else 0.0


def probe_ingest_stats(w: Window) -> TableSize:
    """Count the busiest hour by requests."""
    parts = w.partitions(count_cql=COUNT_INGEST, sample_cql=SAMPLE_INGEST)
    if w.peak_requests is not None:
        hour = w.peak_requests.hour
        parts.count((w.site_id, hour), f"bucket={stamp(hour)}")
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


def probe_failed_events(w: Window) -> TableSize:
    """Count every day of the window."""
    parts = w.partitions(count_cql=COUNT_FAILED, sample_cql=SAMPLE_FAILED)
    for day in timebuckets.buckets_between(w.start, w.end, Width.DAY):
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


def probe_bucket_users(w: Window) -> TableSize:
    """Count the peak hour's per-user counts (written when that hour was sealed)."""
    parts = w.partitions(count_cql=COUNT_BUCKET_USERS, sample_cql=SAMPLE_BUCKET_USERS)
    if w.peak is not None:
        hour = w.peak.hour
        parts.count((w.site_id, "hour", hour), f"hour bucket={stamp(hour)}")
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


def probe_latest_sessions(w: Window) -> TableSize:
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
