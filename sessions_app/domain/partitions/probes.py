"""One probe per table: which partitions of a window to count, and their rows' size."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.conf import settings

from sessions_app.domain.ledger import sizing
from sessions_app.domain.partitions.counting import (
    ASSUMED_ROW_BYTES,
    LATEST_SESSIONS_TTL,
    MAX_COUNTED,
    TOP_KEYS,
    TableSize,
    Window,
    hour_span,
    stamp,
)
from sessions_app.foundation.core import timebuckets
from sessions_app.foundation.core.timebuckets import Width
from sessions_app.foundation.tables import (
    bucket_users,
    failed_events,
    ingest_stats,
    latest_sessions,
    replay_chunks,
    session_events,
    site_events_by_bucket,
    site_sessions,
    transaction_log,
    user_events_by_bucket,
)

RECORDER_CHUNKS_PER_SECOND = 1 / 5  # static/sessions_app/replay.js: a chunk every 5 s


@dataclass
class Heaviest:
    """The heaviest users and sessions of the peak hour, found by the site-events probe."""

    users: list[tuple[str, float]] = field(default_factory=list)
    sessions: list[tuple[Any, float]] = field(default_factory=list)


def probe_site_events(w: Window, heaviest: Heaviest) -> TableSize:
    """Count the peak hour's shards; note the heaviest users and sessions in `heaviest`.

    Events spread evenly over shards (by event hash), so the first MAX_COUNTED
    shards stand for all, and per-user counts scale by shards / shards read.
    """
    users: Counter[str] = Counter()
    sessions: Counter[uuid.UUID] = Counter()

    def tally(row: Mapping[str, Any]) -> None:
        users[row["user_key"]] += 1
        sessions[row["session_id"]] += 1

    parts = w.partitions(
        count_cql=site_events_by_bucket.COUNT, sample_cql=site_events_by_bucket.SAMPLE
    )
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
    heaviest.users = [(k, n * scale) for k, n in users.most_common(TOP_KEYS)]
    heaviest.sessions = [(k, n * scale) for k, n in sessions.most_common(TOP_KEYS)]
    return replace(table, note=note)


def probe_user_events(w: Window, heaviest: Heaviest) -> TableSize:
    """Count the heaviest users' partitions overlapping the peak hour."""
    users = heaviest.users
    width = timebuckets.parse_width(settings.USER_EVENTS_BUCKET)
    parts = w.partitions(
        count_cql=user_events_by_bucket.COUNT, sample_cql=user_events_by_bucket.SAMPLE
    )
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


def probe_session_events(w: Window, heaviest: Heaviest) -> TableSize:
    """Count the heaviest sessions of the peak hour; a session is capped in length."""
    sessions = heaviest.sessions
    parts = w.partitions(count_cql=session_events.COUNT, sample_cql=session_events.SAMPLE)
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


def probe_replay_chunks(w: Window, heaviest: Heaviest) -> TableSize:
    """Count the replay chunks of the peak hour's heaviest sessions; a recording is capped."""
    parts = w.partitions(count_cql=replay_chunks.COUNT, sample_cql=replay_chunks.SAMPLE)
    for session_id, _ in heaviest.sessions:
        parts.count((w.site_id, session_id), f"session_id={session_id}")
    minutes = settings.REPLAY_MAX_SESSION_MINUTES
    largest = parts.largest()[0]
    return w.size(
        "replay_chunks",
        parts,
        partition_key="(site_id, session_id)",
        span=f"one session's recording (at most {minutes} min, "
        f"{settings.REPLAY_MAX_SESSION_BYTES // 2**20} MB)",
        duration=timedelta(minutes=minutes),
        width=None,
        rate=RECORDER_CHUNKS_PER_SECOND if largest is not None and largest.rows else 0.0,
        assumed_row_bytes=ASSUMED_ROW_BYTES["replay_chunks"],
        note="Rate: the recorder's pace (a chunk every 5 s) for the whole recording cap.",
    )


def probe_transaction_log(w: Window, heaviest: Heaviest) -> TableSize:
    """Count every shard of the 10-minute buckets of the busiest hour by requests."""
    parts = w.partitions(count_cql=transaction_log.COUNT, sample_cql=transaction_log.SAMPLE)
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


def probe_site_sessions(w: Window, heaviest: Heaviest) -> TableSize:
    """Count every shard of the day of the peak hour; a row per session started that day."""
    sample = site_sessions.with_dimensions(site_sessions.SAMPLE)
    parts = w.partitions(count_cql=site_sessions.COUNT, sample_cql=sample)
    shards = max(1, settings.SESSION_SHARDS)
    if w.peak is not None:
        day = timebuckets.floor(w.peak.hour, Width.DAY)
        for shard in range(shards):
            parts.count((w.site_id, day, shard), f"day={stamp(day)}, shard={shard}")
    return w.size(
        "site_sessions",
        parts,
        partition_key="(site_id, day, shard)",
        span=f"1 day, {shards} shard(s)",
        duration=timebuckets.nominal_duration(Width.DAY),
        width=Width.DAY,
        rate=_request_rate(w) / shards,
        assumed_row_bytes=ASSUMED_ROW_BYTES["site_sessions"],
        note="At most one new session a request (rate: every request), split by SESSION_SHARDS.",
    )


def _request_rate(w: Window) -> float:
    return w.peak_requests.requests / 3600 if w.peak_requests else 0.0


def probe_ingest_stats(w: Window, heaviest: Heaviest) -> TableSize:
    """Count the busiest hour by requests."""
    parts = w.partitions(count_cql=ingest_stats.COUNT, sample_cql=ingest_stats.SAMPLE)
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


def probe_failed_events(w: Window, heaviest: Heaviest) -> TableSize:
    """Count every day of the window."""
    parts = w.partitions(count_cql=failed_events.COUNT, sample_cql=failed_events.SAMPLE)
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


def probe_bucket_users(w: Window, heaviest: Heaviest) -> TableSize:
    """Count the peak hour's per-user counts (written when that hour was sealed)."""
    parts = w.partitions(count_cql=bucket_users.COUNT, sample_cql=bucket_users.SAMPLE)
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


def probe_latest_sessions(w: Window, heaviest: Heaviest) -> TableSize:
    """Count every sentinel; rows live for the TTL rather than a bucket."""
    parts = w.partitions(count_cql=latest_sessions.COUNT, sample_cql=latest_sessions.SAMPLE)
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
