"""Reads: bounded, prepared, bucket-aware queries; views and tasks call these only."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import redis
from django.conf import settings
from django.db import connections

from sessions_app import buckets
from sessions_app.cassandra import ALIAS, keyspace, prepare, session
from sessions_app.ids import time_uuid_bound

MAX_PAGE = 1000
MAX_RANGE_BUCKETS = 93

SELECT_SESSIONS = """
SELECT session_id, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? LIMIT ?
"""
SELECT_SESSION_EVENTS = """
SELECT event_id, type, name, ts, url, referrer, title, element, props, late, clamped, is_bot
FROM {ks}.session_events WHERE session_id = ? LIMIT ?
"""
SELECT_USER_BUCKET = """
SELECT event_id, session_id, type, name, ts, url, element, props
FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? AND event_id >= ? AND event_id < ? LIMIT ?
"""
SELECT_HEARTBEATS = "SELECT worker, beat_at, written_at FROM {ks}.pipeline_heartbeats LIMIT 100"


def _bounded(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    return limit


def _decode(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def session_list(*, site_id: uuid.UUID, user_key: str, limit: int = 50) -> list[dict[str, Any]]:
    """Return a user's sessions, newest first."""
    rows = session().execute(prepare(SELECT_SESSIONS), (site_id, user_key, _bounded(limit)))
    return [
        {
            **row,
            "started_at": buckets.from_driver(row["started_at"]),
            "last_seen_at": buckets.from_driver(row["last_seen_at"]),
        }
        for row in rows
    ]


def sessions_latest(*, site_id: uuid.UUID, user_keys: list[str]) -> dict[str, dict[str, Any]]:
    """Return each user's newest session summary (one parallel query per user)."""
    statement = prepare(SELECT_SESSIONS)
    futures = [(k, session().execute_async(statement, (site_id, k, 1))) for k in user_keys]
    latest = {}
    for user_key, future in futures:
        row = future.result().one()
        if row is not None:
            latest[user_key] = {
                **row,
                "started_at": buckets.from_driver(row["started_at"]),
                "last_seen_at": buckets.from_driver(row["last_seen_at"]),
            }
    return latest


def session_events(*, session_id: uuid.UUID, limit: int = MAX_PAGE) -> list[dict[str, Any]]:
    """Return a session's events in time order."""
    rows = session().execute(prepare(SELECT_SESSION_EVENTS), (session_id, _bounded(limit)))
    return [
        {
            **row,
            "ts": buckets.from_driver(row["ts"]),
            "element": _decode(row["element"]),
            "props": _decode(row["props"]),
        }
        for row in rows
    ]


def user_events(
    *, site_id: uuid.UUID, user_key: str, start: datetime, end: datetime, limit: int = MAX_PAGE
) -> list[dict[str, Any]]:
    """Return a user's events in [start, end), in time order, across bucket partitions.

    Buckets are read in parallel (one async query each); the range is capped so
    a request never fans out over more than MAX_RANGE_BUCKETS partitions.
    """
    limit = _bounded(limit)
    width = buckets.parse_width(settings.USER_EVENTS_BUCKET)
    partitions = buckets.buckets_between(start, end, width, limit=MAX_RANGE_BUCKETS)
    low, high = time_uuid_bound(start), time_uuid_bound(end)
    statement = prepare(SELECT_USER_BUCKET)
    futures = [
        session().execute_async(statement, (site_id, user_key, bucket, low, high, limit))
        for bucket in partitions
    ]
    events: list[dict[str, Any]] = []
    for future in futures:  # buckets are in time order; rows within a bucket too
        for row in future.result():
            events.append(
                {
                    **row,
                    "ts": buckets.from_driver(row["ts"]),
                    "element": _decode(row["element"]),
                    "props": _decode(row["props"]),
                }
            )
            if len(events) >= limit:
                return events
    return events


@dataclass(frozen=True)
class Check:
    """The outcome of one health probe."""

    ok: bool
    detail: str


def health_cassandra() -> Check:
    """Check that Cassandra answers and the keyspace exists."""
    try:
        name = keyspace()
        row = session().execute("SELECT release_version FROM system.local", timeout=3).one()
        cluster = connections[ALIAS].connection.cluster
        if name not in cluster.metadata.keyspaces:
            cluster.refresh_schema_metadata(max_schema_agreement_wait=2)
        if name not in cluster.metadata.keyspaces:
            return Check(False, f"keyspace {name!r} does not exist (run manage.py sync_cassandra)")
        return Check(True, f"Cassandra {row['release_version']}, keyspace {name}")
    except Exception as exc:  # noqa: BLE001 - report any failure, never raise from health
        return Check(False, f"{type(exc).__name__}: {exc}")


def health_redis() -> Check:
    """Check that Redis answers PING."""
    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2
        )
        client.ping()
        return Check(True, "PONG")
    except Exception as exc:  # noqa: BLE001
        return Check(False, f"{type(exc).__name__}: {exc}")


def health_celery() -> Check:
    """Check that at least one Celery worker answers a broadcast ping."""
    from clickstream.celery import app

    try:
        with app.connection_for_write(settings.CELERY_BROKER_URL) as connection:
            replies = app.control.ping(timeout=1.0, connection=connection)
    except Exception as exc:  # noqa: BLE001
        return Check(False, f"broker unreachable: {type(exc).__name__}: {exc}")
    if not replies:
        return Check(False, "no Celery worker answered ping within 1s")
    workers = sorted(name for reply in replies for name in reply)
    return Check(True, f"{len(workers)} worker(s): {', '.join(workers)}")


def heartbeat_list() -> list[dict[str, Any]]:
    """Return the last pipeline heartbeat written by each worker."""
    rows = session().execute(prepare(SELECT_HEARTBEATS))
    return [
        {
            "worker": row["worker"],
            "beat_at": buckets.from_driver(row["beat_at"]),
            "written_at": buckets.from_driver(row["written_at"]),
        }
        for row in rows
    ]


def health_report() -> dict[str, Any]:
    """Return every probe's outcome and whether all passed."""
    checks = {
        "cassandra": health_cassandra(),
        "redis": health_redis(),
        "celery": health_celery(),
    }
    return {
        "ok": all(check.ok for check in checks.values()),
        "checks": {name: {"ok": c.ok, "detail": c.detail} for name, c in checks.items()},
    }


SELECT_LOG_STATE = """
SELECT batch_id, received_at, applied FROM {ks}.transaction_log
WHERE site_id = ? AND minute = ? AND shard = ?
"""
SELECT_LOG_PAYLOAD = """
SELECT payload FROM {ks}.transaction_log
WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""
SELECT_FAILED = """
SELECT failed_id, received_at, reason, field, source, payload FROM {ks}.failed_events
WHERE site_id = ? AND day = ? LIMIT ?
"""
SELECT_STATS = """
SELECT received, accepted, duplicates, late, clamped, rejected FROM {ks}.ingest_stats
WHERE site_id = ? AND bucket = ?
"""
SELECT_FEED = """
SELECT session_id, user_key, started_at, last_seen_at, event_count, entry_url, exit_url, is_bot
FROM {ks}.latest_sessions WHERE site_id = ? AND sentinel = ? LIMIT ?
"""
SELECT_LINKS = """
SELECT anonymous_id, linked_at FROM {ks}.identity_links WHERE site_id = ? AND user_id = ? LIMIT ?
"""
SELECT_SITE_BUCKET = """
SELECT event_id, session_id, user_key, type, name, ts, url, element, is_bot, late
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""


def txlog_unapplied(
    *, site_id: uuid.UUID, minute: datetime, shards: int, received_before: datetime
) -> list[bytes]:
    """Return payloads of log entries in one log bucket not yet applied, oldest first."""
    state = prepare(SELECT_LOG_STATE)
    futures = [
        (shard, session().execute_async(state, (site_id, minute, shard))) for shard in range(shards)
    ]
    payload = prepare(SELECT_LOG_PAYLOAD)
    found = []
    for shard, future in futures:
        for row in future.result():  # paged by the driver's fetch size
            if row["applied"] or buckets.from_driver(row["received_at"]) >= received_before:
                continue
            found.append((row["batch_id"].time, shard, row["batch_id"]))
    found.sort()
    return [
        session().execute(payload, (site_id, minute, shard, batch_id)).one()["payload"]
        for _, shard, batch_id in found
    ]


def failed_events_list(
    *, site_id: uuid.UUID, day: datetime, limit: int = 100
) -> list[dict[str, Any]]:
    """Return the rejected events of a site on a UTC day, newest first."""
    bucket = buckets.floor(day, buckets.Width.DAY)
    rows = session().execute(prepare(SELECT_FAILED), (site_id, bucket, _bounded(limit)))
    return [{**row, "received_at": buckets.from_driver(row["received_at"])} for row in rows]


def ingest_counts(*, site_id: uuid.UUID, hour: datetime) -> dict[str, Any]:
    """Return the data-quality counts of a site's hour: received, accepted, rejected by reason."""
    bucket = buckets.floor(hour, buckets.Width.HOUR)
    totals: dict[str, Any] = {
        "received": 0,
        "accepted": 0,
        "duplicates": 0,
        "late": 0,
        "clamped": 0,
        "rejected": {},
    }
    for row in session().execute(prepare(SELECT_STATS), (site_id, bucket)):
        for name in ("received", "accepted", "duplicates", "late", "clamped"):
            totals[name] += row[name]
        for reason, count in (row["rejected"] or {}).items():
            totals["rejected"][reason] = totals["rejected"].get(reason, 0) + count
    return totals


def feed_latest(*, site_id: uuid.UUID, limit: int = 20) -> list[dict[str, Any]]:
    """Return the site's most recently active sessions (one entry per session), newest first."""
    limit = _bounded(limit)
    statement = prepare(SELECT_FEED)
    futures = [
        session().execute_async(statement, (site_id, sentinel, limit * 3))
        for sentinel in range(settings.FEED_SHARDS)
    ]
    latest: dict[uuid.UUID, dict[str, Any]] = {}
    for future in futures:
        for row in future.result():
            entry = {
                **row,
                "started_at": buckets.from_driver(row["started_at"]),
                "last_seen_at": buckets.from_driver(row["last_seen_at"]),
            }
            known = latest.get(row["session_id"])
            if known is None or known["last_seen_at"] < entry["last_seen_at"]:
                latest[row["session_id"]] = entry
    ordered = sorted(latest.values(), key=lambda e: e["last_seen_at"], reverse=True)
    return ordered[:limit]


def identity_links(*, site_id: uuid.UUID, user_id: str, limit: int = 100) -> list[str]:
    """Return the anonymous ids identify() linked to a user id."""
    rows = session().execute(prepare(SELECT_LINKS), (site_id, user_id, _bounded(limit)))
    return [row["anonymous_id"] for row in rows]


def site_bucket_events(*, site_id: uuid.UUID, hour: datetime, shards: int) -> list[dict[str, Any]]:
    """Return every event of a site's hour across its shards (aggregation source)."""
    bucket = buckets.floor(hour, buckets.Width.HOUR)
    statement = prepare(SELECT_SITE_BUCKET)
    futures = [session().execute_async(statement, (site_id, bucket, s)) for s in range(shards)]
    events = [{**row, "ts": buckets.from_driver(row["ts"])} for f in futures for row in f.result()]
    events.sort(key=lambda e: e["event_id"].time)
    return events
