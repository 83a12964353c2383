"""Reads: bounded, prepared, bucket-aware queries; views and tasks call these only."""

from __future__ import annotations

import queue
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import redis
from cassandra.concurrent import execute_concurrent
from django.conf import settings
from django.db import connections

from sessions_app import aggregation, buckets, retention
from sessions_app.cassandra import ALIAS, bind, keyspace, prepare, session
from sessions_app.ids import time_uuid_bound, uuid_time
from sessions_app.jsonfmt import dumps

MAX_PAGE = 1000
MAX_RANGE_BUCKETS = 93

SELECT_SESSIONS = """
SELECT session_id, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? LIMIT ?
"""
# An event as the API serves it: these keys, in this order (collector.writer.event_doc
# renders them into session_events.doc at write time; rows written before doc hold
# them as columns, which these statements read after it).
EVENT_FIELDS = (
    "event_id",
    "site_id",
    "user_key",
    "type",
    "name",
    "ts",
    "url",
    "referrer",
    "title",
    "element",
    "props",
    "late",
    "clamped",
    "is_bot",
)
SELECT_SESSION_EVENTS = """
SELECT doc, event_id, site_id, user_key, type, name, ts, url, referrer, title, element, props,
       late, clamped, is_bot
FROM {ks}.session_events WHERE session_id = ? LIMIT ?
"""
SELECT_SESSION_EVENTS_AFTER = """
SELECT doc, event_id, site_id, user_key, type, name, ts, url, referrer, title, element, props,
       late, clamped, is_bot
FROM {ks}.session_events WHERE session_id = ? AND event_id > ? LIMIT ?
"""
# The timeline's read: the documents alone (one cell a row, nothing to decode).
SELECT_SESSION_DOCS = "SELECT doc FROM {ks}.session_events WHERE session_id = ? LIMIT ?"
SELECT_SESSION_DOCS_AFTER = """
SELECT doc FROM {ks}.session_events WHERE session_id = ? AND event_id > ? LIMIT ?
"""
SELECT_HEARTBEATS = "SELECT worker, beat_at, written_at FROM {ks}.pipeline_heartbeats LIMIT 100"


def _bounded(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    return limit


def _decode(value: str | None) -> Any:
    return None if value is None else orjson.loads(value)


def _session_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **row,
        "started_at": buckets.from_driver(row["started_at"]),
        "last_seen_at": buckets.from_driver(row["last_seen_at"]),
    }


def _event_row(row: dict[str, Any]) -> dict[str, Any]:
    """An event as a dict: from its document, or (rows written before it) its columns."""
    doc = row.pop("doc", None)
    if doc is not None:
        return event_from_doc(doc)
    row["ts"] = buckets.from_driver(row["ts"])
    row["element"] = _decode(row.get("element"))
    row["props"] = _decode(row.get("props"))
    return row


def event_from_doc(doc: bytes) -> dict[str, Any]:
    """Decode an event's document into the dict the columns read as (UUIDs, UTC time)."""
    event = orjson.loads(doc)
    event["event_id"] = uuid.UUID(event["event_id"])
    event["site_id"] = uuid.UUID(event["site_id"])
    event["ts"] = datetime.fromisoformat(event["ts"])
    return event


def _doc(row: dict[str, Any]) -> bytes:
    """An event's document: stored, or rendered from the columns of an older row."""
    doc = row.pop("doc")
    return doc if doc is not None else dumps(_event_row(row))


_TS_KEY = b'"ts":"'


def doc_time(doc: bytes) -> datetime:
    """The time of an event's document, read without decoding the rest of it.

    The first `"ts":"` in a document is its key: before it come only string values,
    inside which JSON escapes every quote.
    """
    start = doc.index(_TS_KEY) + len(_TS_KEY)
    return datetime.fromisoformat(doc[start : doc.index(b'"', start)].decode())


def session_list(*, site_id: uuid.UUID, user_key: str, limit: int = 50) -> list[dict[str, Any]]:
    """Return a user's sessions, newest first."""
    rows = session().execute(prepare(SELECT_SESSIONS), (site_id, user_key, _bounded(limit)))
    return [_session_row(row) for row in rows]


def sessions_latest(*, site_id: uuid.UUID, user_keys: list[str]) -> dict[str, dict[str, Any]]:
    """Return each user's newest session summary (one parallel query per user)."""
    statement = prepare(SELECT_SESSIONS)
    futures = [(k, session().execute_async(statement, (site_id, k, 1))) for k in user_keys]
    latest = {}
    for user_key, future in futures:
        row = future.result().one()
        if row is not None:
            latest[user_key] = _session_row(row)
    return latest


SELECT_USER_EVENTS_PRESENT = """
SELECT event_id FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? AND event_id IN ?
"""
PRESENT_CHUNK = 100


def user_events_present(
    *, site_id: uuid.UUID, partitions: dict[tuple[str, datetime], list[uuid.UUID]]
) -> set[uuid.UUID]:
    """Return which of these event ids are stored, per (user key, bucket) partition."""
    statement = prepare(SELECT_USER_EVENTS_PRESENT)
    futures = [
        session().execute_async(
            statement, (site_id, user_key, bucket, ids[start : start + PRESENT_CHUNK])
        )
        for (user_key, bucket), ids in partitions.items()
        for start in range(0, len(ids), PRESENT_CHUNK)
    ]
    return {row["event_id"] for future in futures for row in future.result()}


def _time_uuid(value: uuid.UUID | None, field: str) -> uuid.UUID | None:
    """Refuse UUIDs that are not TimeUUIDs (version 1): Cassandra rejects them in queries."""
    if value is not None and value.version != 1:
        raise RangeError(field, "not an id issued by clickstream (expected a TimeUUID)")
    return value


def session_events(
    *, session_id: uuid.UUID, site_id: uuid.UUID | None = None, limit: int = MAX_PAGE
) -> list[dict[str, Any]]:
    """Return a session's events in time order (only a site's when site_id is given).

    None for an id that cannot be a session, nor for another site's session.
    """
    if session_id.version != 1:
        return []
    rows = session().execute(prepare(SELECT_SESSION_EVENTS), (session_id, _bounded(limit)))
    return [_event_row(row) for row in rows if site_id is None or row["site_id"] == site_id]


SELECT_TIMELINE_STATE = """
SELECT timeline, timeline_site, writetime(timeline) AS built_us, writetime(touched) AS touched_us,
       ttl(touched) AS touched_ttl, prefix, prefix_upto, prefix_count, prefix_user,
       writetime(prefix) AS prefix_us, writetime(backfilled) AS backfilled_us,
       user_key AS first_user, site_id AS first_site
FROM {ks}.session_events WHERE session_id = ? LIMIT 1
"""


@dataclass(frozen=True)
class Prefix:
    """A materialized prefix of an open session: its first events' JSON, up to `upto`."""

    events: bytes  # the events' JSON array without its brackets
    upto: uuid.UUID  # the last event's id
    count: int
    user_key: str


@dataclass(frozen=True)
class TimelineState:
    """A session partition's static cells: its materialized timeline and last write."""

    body: bytes | None
    site_id: uuid.UUID | None
    built_us: int | None  # write time of the materialized copy (µs since the epoch)
    touched_us: int | None  # write time of the partition's last event insert
    touched_ttl: int | None  # seconds that last insert has left
    prefix: Prefix | None = None
    prefix_us: int | None = None  # write time of the prefix
    backfilled_us: int | None = None  # write time of the last insert of an old event
    first_user: str | None = None  # the first event's user key (None: no event rows)
    first_site: uuid.UUID | None = None  # the first event's site (a session has one)

    @property
    def current(self) -> bool:
        """The copy was stamped after the partition's last write, so it holds every event."""
        return (
            self.body is not None
            and self.built_us is not None
            and self.touched_us is not None
            and self.built_us > self.touched_us
        )

    @property
    def prefix_current(self) -> bool:
        """The prefix was stamped after the last insert that could sort inside it."""
        return (
            self.prefix is not None
            and self.prefix_us is not None
            and (self.backfilled_us is None or self.prefix_us > self.backfilled_us)
        )


def timeline_state(*, session_id: uuid.UUID) -> TimelineState | None:
    """Return a session partition's static cells (None when there is no partition)."""
    if session_id.version != 1:
        return None
    row = session().execute(prepare(SELECT_TIMELINE_STATE), (session_id,)).one()
    if row is None:
        return None
    prefix = None
    if row["prefix"] is not None and row["prefix_upto"] is not None and row["prefix_user"]:
        prefix = Prefix(
            events=row["prefix"],
            upto=row["prefix_upto"],
            count=row["prefix_count"] or 0,
            user_key=row["prefix_user"],
        )
    return TimelineState(
        body=row["timeline"],
        site_id=row["timeline_site"],
        built_us=row["built_us"],
        touched_us=row["touched_us"],
        touched_ttl=row["touched_ttl"],
        prefix=prefix,
        prefix_us=row["prefix_us"],
        backfilled_us=row["backfilled_us"],
        first_user=row["first_user"],
        first_site=row["first_site"],
    )


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
        "applier": _applier_state(),
    }


def _applier_state() -> dict[str, Any]:
    """The applier queue, for operators (not a check: without an applier the collector
    writes plans itself)."""
    from sessions_app.collector.applier import backlog

    try:
        return {**backlog(), "max": settings.APPLY_QUEUE_MAX_PLANS}
    except Exception as exc:  # noqa: BLE001 - Redis down is the redis check's failure
        return {"error": f"{type(exc).__name__}: {exc}"}


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
            entry = _session_row(row)
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
    events = [_event_row(row) for f in futures for row in f.result()]
    events.sort(key=lambda e: e["event_id"].time)
    return events


# --- analyst reads: cursors across partitions and buckets ---------------------------

MAX_RANGE = timedelta(days=92)
SELECT_SESSIONS_BEFORE = """
SELECT session_id, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? AND session_id < ? LIMIT ?
"""
SELECT_SESSION_ONE = """
SELECT session_id, user_key, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot
FROM {ks}.user_sessions WHERE site_id = ? AND user_key = ? AND session_id = ?
"""
SELECT_USER_BUCKET_AFTER = """
SELECT event_id, session_id, type, name, ts, url, element, props
FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? AND event_id > ? AND event_id < ? LIMIT ?
"""
SELECT_USER_BUCKETS_IN = """
SELECT bucket, event_id, session_id, type, name, ts, url, element, props
FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket IN ? AND event_id > ? AND event_id < ?
PER PARTITION LIMIT ?
"""


class RangeError(ValueError):
    """A requested time range or page size is outside the allowed bounds."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class SessionPage:
    sessions: list[dict[str, Any]]
    next_cursor: uuid.UUID | None


def sessions_page(
    *,
    site_id: uuid.UUID,
    user_keys: list[str],
    limit: int = 20,
    before: uuid.UUID | None = None,
) -> SessionPage:
    """Return sessions of several user keys (a user and its linked anonymous ids), newest first.

    The cursor is the last session id shown; each key's partition is read from
    just below it, in parallel, and the results merged by session start.
    """
    limit = _bounded(limit)
    before = _time_uuid(before, "cursor")
    if not 1 <= len(user_keys) <= 20:
        raise RangeError("user_keys", "between 1 and 20 keys")
    upper = before or time_uuid_bound(datetime.now(UTC) + timedelta(days=2), upper=True)
    statement = prepare(SELECT_SESSIONS_BEFORE)
    futures = [
        (k, session().execute_async(statement, (site_id, k, upper, limit + 1))) for k in user_keys
    ]
    merged: list[dict[str, Any]] = []
    for user_key, future in futures:
        merged.extend({**_session_row(row), "user_key": user_key} for row in future.result())
    merged.sort(key=lambda s: s["session_id"].time, reverse=True)
    page = merged[:limit]
    return SessionPage(page, page[-1]["session_id"] if len(merged) > limit else None)


def session_summary(
    *, site_id: uuid.UUID, user_key: str, session_id: uuid.UUID
) -> dict[str, Any] | None:
    """Return one session's summary row, or None."""
    if session_id.version != 1:
        return None
    row = session().execute(prepare(SELECT_SESSION_ONE), (site_id, user_key, session_id)).one()
    return _session_row(row) if row else None


def session_tail(
    *,
    site_id: uuid.UUID,
    user_key: str,
    session_id: uuid.UUID,
    after: uuid.UUID | None,
    limit: int,
) -> tuple[list[bytes], dict[str, Any] | None]:
    """Return the documents of a session's events after `after` (all for None; at most
    limit, none for 0) and its summary.

    The two reads run concurrently: what a timeline read from its rows (after None)
    or from a materialized prefix (after its last event) needs. The caller has
    checked the partition's site (a session's id hashes its site's). Rows written
    before documents are read again with their columns, and rendered.
    """
    if session_id.version != 1:
        return [], None
    db = session()
    summary = db.execute_async(prepare(SELECT_SESSION_ONE), (site_id, user_key, session_id))
    docs: list[bytes] = []
    if limit:
        if after is None:
            params: tuple[Any, ...] = (session_id, _bounded(limit))
            only_docs, with_columns = SELECT_SESSION_DOCS, SELECT_SESSION_EVENTS
        else:
            params = (session_id, after, _bounded(limit))
            only_docs, with_columns = SELECT_SESSION_DOCS_AFTER, SELECT_SESSION_EVENTS_AFTER
        docs = [row["doc"] for row in db.execute_async(prepare(only_docs), params).result()]
        if None in docs:
            rows = db.execute(prepare(with_columns), params)
            docs = [_doc(row) for row in rows if row["site_id"] == site_id]
    row = summary.result().one()
    return docs, _session_row(row) if row else None


@dataclass(frozen=True)
class ActivityPage:
    """One page of a user's events across buckets, and how they were read."""

    events: list[dict[str, Any]]
    next_cursor: uuid.UUID | None
    strategy: str
    partitions: list[dict[str, Any]]
    queries: int = 0  # statements sent to Cassandra


def _check_range(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start, end = buckets.as_utc(start), buckets.as_utc(end)
    if end <= start:
        raise RangeError("end", "must be after start")
    if end - start > MAX_RANGE:
        raise RangeError("end", f"range longer than {MAX_RANGE.days} days; narrow it")
    return start, end


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
    limit = _bounded(limit)
    start, end = _check_range(start, end)
    cursor = _time_uuid(cursor, "cursor")
    first = max(start, uuid_time(cursor)) if cursor else start
    try:
        partitions = user_partitions(
            site_id=site_id, user_key=user_key, start=first, end=end, limit=MAX_RANGE_BUCKETS
        )
    except buckets.BucketRangeError:  # a super-active user's hour buckets
        raise RangeError("end", f"more than {MAX_RANGE_BUCKETS} partitions; narrow it") from None
    low = cursor or time_uuid_bound(start - timedelta(microseconds=1), upper=True)
    high = time_uuid_bound(end)
    chosen = strategy or settings.ACTIVITY_READ_STRATEGY
    if chosen == "auto":
        chosen = "in" if len(partitions) <= settings.ACTIVITY_IN_MAX_BUCKETS else "parallel"
    if chosen not in ("in", "parallel", "sequential"):
        raise RangeError("strategy", "one of auto, in, parallel, sequential")
    read: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    queries = 0
    if chosen == "in" and len(partitions) > settings.ACTIVITY_IN_MAX_BUCKETS:
        raise RangeError("strategy", f"IN reads at most {settings.ACTIVITY_IN_MAX_BUCKETS} buckets")
    chunks, window = activity_chunks(partitions, chosen)
    one, several = prepare(SELECT_USER_BUCKET_AFTER), prepare(SELECT_USER_BUCKETS_IN)
    db = session()
    for offset in range(0, len(chunks), window):
        batch = chunks[offset : offset + window]
        futures = [
            db.execute_async(
                bind(one, (site_id, user_key, chunk[0], low, high, limit + 1))
                if len(chunk) == 1
                else bind(several, (site_id, user_key, chunk, low, high, limit + 1))
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
        if len(events) > limit:
            break
    page = events[:limit]
    next_cursor = page[-1]["event_id"] if len(events) > limit else None
    return ActivityPage(page, next_cursor, chosen, read, queries)


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
        found = [_event_row(row) for row in rows]
        return found, {chunk[0]: len(found)}
    # Keyed by the driver's value (naive UTC): no conversion per row.
    groups: dict[datetime, list[dict[str, Any]]] = {buckets.as_driver(b): [] for b in chunk}
    for row in rows:
        groups[row.pop("bucket")].append(_event_row(row))
    found = [event for group in groups.values() for event in group]
    return found, {b: len(group) for b, group in zip(chunk, groups.values(), strict=True)}


MAX_LIVE_HOURS = 72
MAX_REPORT_BUCKETS = 744  # 31 days of hours, or 92 days of days (the range cap)


@dataclass(frozen=True)
class ReportBucket:
    """One bucket of a site report and where its numbers came from."""

    bucket: datetime
    state: str  # "sealed" (stored aggregates), "live" (raw rows read now), "pending"
    aggregates: aggregation.Aggregates


def _live_hour(site_id: uuid.UUID, hour: datetime, shards: int) -> aggregation.Aggregates:
    """Compute an unsealed hour from its raw rows, as a seal would (without storing it)."""
    end = buckets.next_start(hour, buckets.Width.HOUR)
    rows = site_bucket_rows(site_id=site_id, hour=hour, shards=shards)
    result, spans = aggregation.count_events(rows, conversion_event=settings.CONVERSION_EVENT)
    aggregation.count_sessions(
        result,
        session_summaries(site_id=site_id, start=hour, end=end, spans=spans),
        start=hour,
        end=end,
    )
    return result


def site_report(
    *, site_id: uuid.UUID, shards: int, start: datetime, end: datetime, width: str = "hour"
) -> dict[str, Any]:
    """Return a site's numbers per hour or day over [start, end), widened to whole buckets.

    Sealed buckets come from their stored aggregates (one slice per resolution);
    an unsealed day is merged from its sealed hours plus its other hours computed
    live from the raw partitions; at most MAX_LIVE_HOURS hours are computed live
    per report, later ones are "pending" until sealed. Each bucket says which.
    """
    from sessions_app.models import BucketState

    start, end = _check_range(start, end)
    grain = buckets.parse_width(width)
    if grain not in (buckets.Width.HOUR, buckets.Width.DAY):
        raise RangeError("width", "hour or day")
    start, end = buckets.floor(start, grain), buckets.ceil(end, grain)
    try:
        shown = buckets.buckets_between(start, end, grain, limit=MAX_REPORT_BUCKETS)
    except buckets.BucketRangeError:
        raise RangeError("end", f"at most {MAX_REPORT_BUCKETS} {grain.value} buckets") from None
    states = BucketState.objects.filter(site_id=site_id, bucket__gte=start, bucket__lt=end)
    known: dict[tuple[str, datetime], str] = {}
    hour_shards: dict[datetime, int] = {}
    for g, b, state, used in states.values_list("granularity", "bucket", "state", "shards"):
        known[g, buckets.as_utc(b)] = state
        if g == "hour":
            hour_shards[buckets.as_utc(b)] = used
    sealed_at = {key for key, state in known.items() if state == BucketState.SEALED}
    # Every event opens its hour's state: an hour past its sealing time without one
    # had no events, so it is empty, not unknown (no raw read needed).
    settled = datetime.now(UTC) - settings.ALLOWED_LATENESS
    stored: dict[tuple[str, datetime], aggregation.Aggregates] = {}
    hours_from: datetime | None = start
    if grain is buckets.Width.DAY:
        stored.update(
            (("day", b), a)
            for b, a in aggregates_range(site_id=site_id, granularity="day", start=start, end=end)
        )
        # Hours only for the days not sealed: one slice from the first of them on.
        hours_from = next((b for b in shown if ("day", b) not in sealed_at), None)
    if hours_from is not None:
        stored.update(
            (("hour", b), a)
            for b, a in aggregates_range(
                site_id=site_id, granularity="hour", start=hours_from, end=end
            )
        )
    report: list[ReportBucket] = []
    live_hours, partitions = 0, 0
    for bucket in shown:
        key = (grain.value, bucket)
        if key in sealed_at and key in stored:
            report.append(ReportBucket(bucket, "sealed", stored[key]))
            continue
        parts: list[aggregation.Aggregates] = []
        state = "sealed"
        for hour in buckets.buckets_between(bucket, buckets.next_start(bucket, grain), "hour"):
            if ("hour", hour) in sealed_at and ("hour", hour) in stored:
                parts.append(stored["hour", hour])
            elif ("hour", hour) not in known and buckets.next_start(hour, "hour") <= settled:
                continue  # empty
            elif live_hours < MAX_LIVE_HOURS:
                live_hours += 1
                used = max(shards, hour_shards.get(hour, 1))  # every shard the hour had
                partitions += used
                parts.append(_live_hour(site_id, hour, used))
                state = "live"
            else:
                state = "pending"
        merged = aggregation.aggregates_merge(parts) if parts else aggregation.Aggregates()
        report.append(ReportBucket(bucket, state, merged))
    totals = aggregation.aggregates_merge([r.aggregates for r in report]) if report else None
    return {
        "start": start,
        "end": end,
        "width": grain.value,
        "buckets": report,
        "totals": totals or aggregation.Aggregates(),
        "live_hours": live_hours,
        "raw_partitions_read": partitions,
        "pending": sum(1 for r in report if r.state == "pending"),
    }


SELECT_AGGREGATE = """
SELECT bucket, events, by_type, by_name, sessions_started, users, bounces, conversions,
       durations, top_pages, top_clicks, rows_read, sealed_at, users_sketch
FROM {ks}.bucket_aggregates WHERE site_id = ? AND granularity = ? AND bucket = ?
"""
SELECT_AGGREGATE_RANGE = """
SELECT bucket, events, by_type, by_name, sessions_started, users, bounces, conversions,
       durations, top_pages, top_clicks, rows_read, sealed_at, users_sketch
FROM {ks}.bucket_aggregates
WHERE site_id = ? AND granularity = ? AND bucket >= ? AND bucket < ? LIMIT ?
"""
SELECT_BUCKET_USERS = """
SELECT user_key, counts FROM {ks}.bucket_users WHERE site_id = ? AND granularity = ? AND bucket = ?
"""
SELECT_LEGACY_USER_COUNTS = """
SELECT user_key, event_key, count FROM {ks}.bucket_user_counts
WHERE site_id = ? AND granularity = ? AND bucket = ?
"""
SELECT_SEAL_ROWS = """
SELECT session_id, user_key, type, name, ts, url, element, is_bot
FROM {ks}.site_events_by_bucket WHERE site_id = ? AND bucket = ? AND shard = ?
"""
SELECT_PARTIALS = """
SELECT tally FROM {ks}.bucket_partials WHERE site_id = ? AND bucket = ? AND shard = ?
"""
MAX_AGGREGATE_ROWS = 2_000  # a 92-day range of hours is 2,208 rows: read hours ≤ 83 days


SELECT_SESSIONS_OF_USERS = """
SELECT session_id, user_key, started_at, last_seen_at, anonymous_id, user_id, event_count,
       pageview_count, click_count, entry_url, exit_url, converted, is_bot
FROM {ks}.user_sessions
WHERE site_id = ? AND user_key IN ? AND session_id >= ? AND session_id <= ? LIMIT ?
"""
USERS_PER_QUERY = 50  # the IN list's cap
SESSIONS_PER_QUERY = 2_000


def sessions_by_id(
    *, site_id: uuid.UUID, keys: list[tuple[str, uuid.UUID]]
) -> dict[uuid.UUID, dict[str, Any]]:
    """Return user_sessions rows for (user_key, session_id) pairs.

    For a seal's thousands of sessions: one query per USERS_PER_QUERY users (an IN
    list of their partitions, sliced between the first and last id wanted), all in
    flight at once within a window; ids it did not return (a slice cut by its
    LIMIT) are read one by one.
    """
    wanted = {session_id for _, session_id in keys}
    users = sorted({user_key for user_key, _ in keys})
    by_user: dict[str, list[uuid.UUID]] = {}
    for user_key, session_id in keys:
        by_user.setdefault(user_key, []).append(session_id)
    work = []
    for start in range(0, len(users), USERS_PER_QUERY):
        group = users[start : start + USERS_PER_QUERY]
        ids = [i for user in group for i in by_user[user]]
        low = min(ids, key=lambda i: (i.time, i.bytes))
        high = max(ids, key=lambda i: (i.time, i.bytes))
        work.append(
            (prepare(SELECT_SESSIONS_OF_USERS), (site_id, group, low, high, SESSIONS_PER_QUERY))
        )
    found: dict[uuid.UUID, dict[str, Any]] = {}
    for _, rows in execute_concurrent(session(), work, concurrency=32, raise_on_first_error=True):
        for row in rows:
            if row["session_id"] in wanted:
                found[row["session_id"]] = _session_row(row)
    statement = prepare(SELECT_SESSION_ONE)
    missing = [(u, i) for u, i in keys if i not in found]
    for start in range(0, len(missing), 256):  # bounded fan-out per wave
        futures = [
            session().execute_async(statement, (site_id, user_key, session_id))
            for user_key, session_id in missing[start : start + 256]
        ]
        for future in futures:
            row = future.result().one()
            if row is not None:
                found[row["session_id"]] = _session_row(row)
    return found


# --- adaptive user bucket widths --------------------------------------------------

WIDTH_CACHE_SECONDS = 10.0
_width_cache: dict[uuid.UUID, tuple[float, dict[str, list[tuple[datetime, buckets.Width]]]]] = {}


def user_widths(site_id: uuid.UUID) -> dict[str, list[tuple[datetime, buckets.Width]]]:
    """Return the width histories of a site's super-active users, cached per process.

    Changes take effect at least an hour after they are made, far longer than the
    cache lives, so every process writes and reads with the same history.
    """
    from sessions_app.models import UserBucketWidth

    cached = _width_cache.get(site_id)
    if cached is not None and time.monotonic() - cached[0] < WIDTH_CACHE_SECONDS:
        return cached[1]
    found: dict[str, list[tuple[datetime, buckets.Width]]] = {}
    rows = UserBucketWidth.objects.filter(site_id=site_id).order_by("effective_from")
    for user_key, width, effective_from in rows.values_list("user_key", "width", "effective_from"):
        found.setdefault(user_key, []).append(
            (buckets.as_utc(effective_from), buckets.parse_width(width))
        )
    _width_cache[site_id] = (time.monotonic(), found)
    return found


def user_widths_forget(site_id: uuid.UUID) -> None:
    _width_cache.pop(site_id, None)


def user_partitions(
    *, site_id: uuid.UUID, user_key: str, start: datetime, end: datetime, limit: int | None = None
) -> list[datetime]:
    """Return the user_events_by_bucket partitions (bucket starts) holding [start, end)."""
    return buckets.buckets_with_history(
        start,
        end,
        settings.USER_EVENTS_BUCKET,
        user_widths(site_id).get(user_key, []),
        limit=limit,
    )


def hour_shards(*, site_id: uuid.UUID, hours: list[datetime]) -> dict[datetime, int]:
    """Return how many shards each of a site's hours was written with (BucketState)."""
    from sessions_app.models import BucketState

    found: dict[datetime, int] = {}
    for start in range(0, len(hours), 500):
        rows = BucketState.objects.filter(
            site_id=site_id, granularity="hour", bucket__in=hours[start : start + 500]
        ).values_list("bucket", "shards")
        found.update((buckets.as_utc(b), n) for b, n in rows)
    return found


def site_bucket_rows(
    *, site_id: uuid.UUID, hour: datetime, shards: int, page_size: int = 20_000
) -> Iterator[dict[str, Any]]:
    """Yield the raw rows of a site's hour from every shard (seal input), page by page.

    Only the columns the aggregates need.
    """
    return _shards_scan(
        SELECT_SEAL_ROWS, site_id=site_id, hour=hour, shards=shards, page_size=page_size
    )


def bucket_partials(*, site_id: uuid.UUID, hour: datetime, shards: int) -> aggregation.Tally | None:
    """Return the merged tallies the applier wrote for a site's hour; None if it wrote none.

    Each row is one batch's tally of its events in the hour (writer.partial_rows);
    whether they cover every raw row is BucketState.partials' business.
    """
    payloads = [
        row["tally"]
        for row in _shards_scan(
            SELECT_PARTIALS, site_id=site_id, hour=hour, shards=shards, page_size=5_000
        )
    ]
    return aggregation.tally_fold(payloads) if payloads else None


def _shards_scan(
    query_text: str, *, site_id: uuid.UUID, hour: datetime, shards: int, page_size: int
) -> Iterator[dict[str, Any]]:
    """Yield the rows of a (site, hour, shard) table's hour from every shard.

    Every shard pages concurrently: the driver fetches a shard's next page as soon
    as its previous one arrived, while this generator hands pages to the caller as
    they come.
    """
    bucket = buckets.floor(hour, buckets.Width.HOUR)
    statement = prepare(query_text)
    pages: queue.Queue[list[dict[str, Any]] | BaseException | None] = queue.Queue()

    def follow(future: Any) -> None:
        def on_page(rows: list[dict[str, Any]]) -> None:
            pages.put(rows)
            if future.has_more_pages:
                future.start_fetching_next_page()
            else:
                pages.put(None)

        future.add_callbacks(on_page, pages.put)

    for shard in range(shards):
        query = statement.bind((site_id, bucket, shard))
        query.fetch_size = page_size
        follow(session().execute_async(query))
    remaining = shards
    while remaining:
        page = pages.get(timeout=settings.CASSANDRA_SCAN_TIMEOUT)
        if page is None:
            remaining -= 1
        elif isinstance(page, BaseException):
            raise page
        else:
            yield from page


def session_summaries(
    *, site_id: uuid.UUID, start: datetime, end: datetime, spans: dict[uuid.UUID, aggregation.Span]
) -> dict[uuid.UUID, dict[str, Any]]:
    """Return the summaries of the human sessions that started in [start, end).

    A session whose last event in the bucket is more than the inactivity gap
    before the bucket's end cannot have continued past it (a later event would
    open a new session; a late one reopens this bucket), so its summary comes
    from the bucket's own rows. Only the others are read from user_sessions.
    """
    horizon = (end - settings.SESSION_INACTIVITY).replace(tzinfo=None)  # rows' ts are naive UTC
    found: dict[uuid.UUID, dict[str, Any]] = {}
    lookups: list[tuple[str, uuid.UUID]] = []
    for session_id, span in spans.items():
        if not start <= uuid_time(session_id) < end:
            continue
        if span.last is not None and span.last < horizon:
            found[session_id] = {
                "started_at": span.first,
                "last_seen_at": span.last,
                "event_count": span.events,
                "pageview_count": span.pageviews,
                "is_bot": False,
            }
        else:
            lookups.append((span.user_key, session_id))
    found.update(sessions_by_id(site_id=site_id, keys=sorted(lookups, key=str)))
    return found


def _aggregate(row: dict[str, Any]) -> aggregation.Aggregates:
    return aggregation.Aggregates(
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
    )


def aggregates_range(
    *, site_id: uuid.UUID, granularity: str, start: datetime, end: datetime
) -> list[tuple[datetime, aggregation.Aggregates]]:
    """Return the stored aggregates of a site's buckets in [start, end), in time order.

    One slice of the (site, granularity) partition. A row exists once the bucket
    was sealed; whether it is still current is BucketState's business.
    """
    rows = session().execute(
        prepare(SELECT_AGGREGATE_RANGE),
        (site_id, granularity, buckets.as_utc(start), buckets.as_utc(end), MAX_AGGREGATE_ROWS),
    )
    return [(buckets.from_driver(row["bucket"]), _aggregate(row)) for row in rows]


def bucket_user_counts(
    *, site_id: uuid.UUID, granularity: str, bucket_starts: list[datetime]
) -> dict[tuple[str, str], int]:
    """Return the summed per-(user, event key) counts of a site's sealed buckets.

    Reads one bucket_users partition per bucket (24 for a day, about 30 for a
    month), in parallel, paging through each. A bucket with no rows there was
    sealed before that table (or had no users): its legacy bucket_user_counts
    partition is read instead.
    """
    totals: Counter[tuple[str, str]] = Counter()
    empty = []
    statement = prepare(SELECT_BUCKET_USERS)
    for chunk in _chunks(bucket_starts, 32):
        futures = [
            (b, session().execute_async(statement, (site_id, granularity, b))) for b in chunk
        ]
        for bucket, future in futures:
            found = False
            for row in future.result():
                found = True
                user = row["user_key"]
                for key, n in row["counts"].items():
                    totals[user, key] += n
            if not found:
                empty.append(bucket)
    statement = prepare(SELECT_LEGACY_USER_COUNTS)
    for chunk in _chunks(empty, 32):
        for future in [
            session().execute_async(statement, (site_id, granularity, b)) for b in chunk
        ]:
            for row in future.result():
                totals[row["user_key"], row["event_key"]] += row["count"]
    return dict(totals)


def _chunks(items: list[datetime], size: int) -> Iterator[list[datetime]]:
    for offset in range(0, len(items), size):
        yield items[offset : offset + size]


def bucket_aggregate(
    *, site_id: uuid.UUID, granularity: str, bucket: datetime
) -> dict[str, Any] | None:
    """Return the sealed aggregates of one bucket, or None if it was never sealed."""
    row = session().execute(prepare(SELECT_AGGREGATE), (site_id, granularity, bucket)).one()
    if row is None:
        return None
    result = _aggregate(row)
    return {
        **{k: v for k, v in vars(result).items() if k not in ("users_sketch", "user_counts")},
        "bucket": buckets.from_driver(row["bucket"]),
        "sealed_at": buckets.from_driver(row["sealed_at"]),
    }


# --- rolling counters (seed 002 use case 3) -------------------------------------------

ROLLING_WINDOWS = (
    ("1h", timedelta(hours=1)),
    ("24h", timedelta(hours=24)),
    ("7d", timedelta(days=7)),
    ("30d", timedelta(days=30)),
    ("12mo", timedelta(days=365)),
)
ROLLING_WIDTHS = (buckets.Width.MONTH, buckets.Width.DAY, buckets.Width.HOUR)
SELECT_ROLLING = """
SELECT bucket, count FROM {ks}.rolling_counts
WHERE site_id = ? AND user_key = ? AND granularity = ? AND period = ? AND event_key = ?
  AND bucket >= ? AND bucket <= ?
"""
SELECT_USER_RAW_KEYS = """
SELECT type, name FROM {ks}.user_events_by_bucket
WHERE site_id = ? AND user_key = ? AND bucket = ? AND event_id >= ? AND event_id < ?
"""
MAX_ROLLING_RAW_ROWS = 100_000


class SealedBuckets:
    """Which buckets of a site a cover may take from stored per-bucket counts.

    A bucket qualifies when it is sealed, or when it is provably empty: past its
    sealing time with no state of its own and none inside it (every event opens
    its hour's state, so no state means no events). States are fetched from SQL
    one counter period at a time (a month of hours, a year of days, all months).
    """

    def __init__(self, site_id: uuid.UUID, now: datetime) -> None:
        self.site_id = site_id
        self.now = buckets.as_utc(now)
        self._states: dict[tuple[str, datetime], dict[datetime, str]] = {}
        self._busy_days: dict[datetime, set[datetime]] = {}

    def __call__(self, width: buckets.Width, start: datetime) -> bool:
        from sessions_app.models import BucketState

        period = buckets.rolling_period(width, start)
        states = self._load(width, period)
        state = states.get(start)
        if state is not None:
            return state == BucketState.SEALED
        end = buckets.next_start(start, width)
        if end + settings.ALLOWED_LATENESS > self.now:
            return False  # events may still arrive
        if width is buckets.Width.HOUR:
            return True
        if width is buckets.Width.DAY:
            return start not in self._days_with_hours(period)
        return not BucketState.objects.filter(
            site_id=self.site_id, bucket__gte=start, bucket__lt=end
        ).exists()

    def _load(self, width: buckets.Width, period: datetime) -> dict[datetime, str]:
        from sessions_app.models import BucketState

        key = (width.value, period)
        if key not in self._states:
            rows = BucketState.objects.filter(site_id=self.site_id, granularity=width.value)
            if width is not buckets.Width.MONTH:
                rows = rows.filter(
                    bucket__gte=period, bucket__lt=buckets.rolling_period_end(width, period)
                )
            self._states[key] = {
                buckets.as_utc(b): state for b, state in rows.values_list("bucket", "state")
            }
        return self._states[key]

    def _days_with_hours(self, year: datetime) -> set[datetime]:
        """The days of a year that have any hour state (their events may be unsealed)."""
        from django.db.models.functions import TruncDay

        from sessions_app.models import BucketState

        if year not in self._busy_days:
            days = (
                BucketState.objects.filter(
                    site_id=self.site_id,
                    granularity="hour",
                    bucket__gte=year,
                    bucket__lt=buckets.rolling_period_end(buckets.Width.DAY, year),
                )
                .annotate(day=TruncDay("bucket", tzinfo=UTC))
                .values_list("day", flat=True)
                .distinct()
            )
            self._busy_days[year] = {buckets.as_utc(d) for d in days}
        return self._busy_days[year]


@dataclass(frozen=True)
class RollingCount:
    window: str
    start: datetime
    end: datetime
    count: int
    partitions_read: int
    rows_read: int
    pieces: list[tuple[str, datetime, datetime]]


def rolling_count(
    *,
    site_id: uuid.UUID,
    user_key: str,
    event_key: str,
    start: datetime,
    end: datetime,
    sealed: Callable[[buckets.Width, datetime], bool] | None = None,
    window: str = "",
    widths: tuple[buckets.Width, ...] = ROLLING_WIDTHS,
) -> RollingCount:
    """Count a user's events with this key (custom name, else type) in [start, end).

    The range is covered by the largest sealed buckets that fit inside it
    (months, then days, then hours at the edges) whose per-user counts the seals
    wrote, and the rest (the very edges, unsealed or reopened buckets) is counted
    from the user's raw event partitions. All partitions are read in parallel.
    """
    start, end = _check_rolling_range(start, end)
    usable = sealed or SealedBuckets(site_id, end)
    pieces = buckets.cover(start, end, widths, usable)
    wanted: dict[tuple[str, datetime], set[datetime]] = {}
    raw: list[tuple[datetime, datetime]] = []
    for width, low, high in pieces:
        if width == buckets.RAW:
            raw.append((low, high))
        else:
            wanted.setdefault((width, buckets.rolling_period(width, low)), set()).add(low)
    counted = prepare(SELECT_ROLLING)
    futures: list[tuple[set[datetime] | None, Any]] = [
        (
            starts,
            session().execute_async(
                counted,
                (site_id, user_key, width, period, event_key, min(starts), max(starts)),
            ),
        )
        for (width, period), starts in wanted.items()
    ]
    raw_statement = prepare(SELECT_USER_RAW_KEYS)
    raw_partitions: set[datetime] = set()
    for low, high in raw:
        for bucket in user_partitions(
            site_id=site_id, user_key=user_key, start=low, end=high, limit=MAX_RANGE_BUCKETS * 24
        ):
            raw_partitions.add(bucket)
            bounds = (time_uuid_bound(low), time_uuid_bound(high))
            futures.append(
                (None, session().execute_async(raw_statement, (site_id, user_key, bucket, *bounds)))
            )
    total, raw_rows, rows_read = 0, 0, 0
    for starts, future in futures:
        for row in future.result():
            rows_read += 1
            if starts is not None:
                if buckets.from_driver(row["bucket"]) in starts:  # skip reopened buckets
                    total += row["count"]
                continue
            raw_rows += 1
            if raw_rows > MAX_ROLLING_RAW_ROWS:
                raise RangeError("event", "too many raw events to count; seal the buckets first")
            kind = row["type"]
            if ((row["name"] or kind) if kind == "custom" else kind) == event_key:
                total += 1
    return RollingCount(
        window, start, end, total, len(wanted) + len(raw_partitions), rows_read, pieces
    )


def _check_rolling_range(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start, end = buckets.as_utc(start), buckets.as_utc(end)
    if end <= start:
        raise RangeError("end", "must be after start")
    if end - start > timedelta(days=366):
        raise RangeError("end", "rolling counters cover at most 366 days")
    return start, end


def rolling_counts(
    *, site_id: uuid.UUID, user_key: str, event_key: str, now: datetime
) -> list[RollingCount]:
    """Return a user's counts of one event key over the last 1 h, 24 h, 7 d, 30 d, 12 months."""
    now = buckets.as_utc(now)
    sealed = SealedBuckets(site_id, now)  # shared: the windows overlap
    return [
        rolling_count(
            site_id=site_id,
            user_key=user_key,
            event_key=event_key,
            start=now - length,
            end=now,
            sealed=sealed,
            window=name,
        )
        for name, length in ROLLING_WINDOWS
    ]


# --- retention: policies, table options, purge runs ------------------------------

SELECT_TABLE_OPTIONS = """
SELECT table_name, compaction, default_time_to_live, gc_grace_seconds
FROM system_schema.tables WHERE keyspace_name = ?
"""


@dataclass(frozen=True)
class PolicyRow:
    """A retention policy as the admin page shows it."""

    key: str
    label: str
    tables: tuple[str, ...]
    days: int
    default_days: int
    min_days: int
    min_reason: str
    max_days: int
    updated_by: str | None
    updated_at: datetime | None


def retention_policies() -> list[PolicyRow]:
    """Return every retention policy: its stored value, or the settings default."""
    from sessions_app.models import RetentionPolicy

    stored = {p.key: p for p in RetentionPolicy.objects.select_related("updated_by")}
    rows = []
    for key, spec in retention.SPECS.items():
        policy = stored.get(key)
        low, why = spec.min_days()
        rows.append(
            PolicyRow(
                key=key,
                label=spec.label,
                tables=spec.tables,
                days=policy.days if policy else spec.default_days(),
                default_days=spec.default_days(),
                min_days=low,
                min_reason=why,
                max_days=spec.max_days,
                updated_by=(
                    policy.updated_by.get_username() if policy and policy.updated_by else None
                ),
                updated_at=policy.updated_at if policy else None,
            )
        )
    return rows


@dataclass(frozen=True)
class TableOptions:
    """The retention-related options Cassandra reports for one table."""

    table: str
    compaction: str
    window: str
    default_time_to_live: int
    gc_grace_seconds: int


def table_options() -> list[TableOptions]:
    """Return compaction, default TTL and gc_grace of every table of the keyspace."""
    rows = session().execute(prepare(SELECT_TABLE_OPTIONS), (keyspace(),))
    result = []
    for row in rows:
        compaction = dict(row["compaction"] or {})
        window = (
            f"{compaction.get('compaction_window_size')} {compaction.get('compaction_window_unit')}"
            if "compaction_window_unit" in compaction
            else ""
        )
        result.append(
            TableOptions(
                table=row["table_name"],
                compaction=str(compaction.get("class", "")).rsplit(".", 1)[-1],
                window=window,
                default_time_to_live=row["default_time_to_live"],
                gc_grace_seconds=row["gc_grace_seconds"],
            )
        )
    return sorted(result, key=lambda t: t.table)


def purge_runs(*, limit: int = 20) -> list[Any]:
    """Return the latest purge runs, newest first."""
    from sessions_app.models import PurgeRun

    return list(PurgeRun.objects.select_related("requested_by")[: _bounded(limit)])


# --- erasure: the suppression list -------------------------------------------------

_suppressed: dict[uuid.UUID, tuple[float, frozenset[str]]] = {}


def suppressed_keys(*, site_id: uuid.UUID) -> frozenset[str]:
    """Return the site's suppressed user keys (erased on request), cached per process.

    The collector asks once per request, so the set is loaded from SQL at most
    once every SUPPRESSION_CACHE_SECONDS per process and site; an erasure waits
    longer than that (ERASURE_SETTLE_SECONDS) before deleting anything.
    """
    from sessions_app.models import Suppression

    now = time.monotonic()
    cached = _suppressed.get(site_id)
    if cached is not None and now - cached[0] < settings.SUPPRESSION_CACHE_SECONDS:
        return cached[1]
    keys = frozenset(Suppression.objects.filter(site_id=site_id).values_list("key", flat=True))
    _suppressed[site_id] = (now, keys)
    return keys


def suppressed_keys_forget(*, site_id: uuid.UUID) -> None:
    """Drop this process's cached suppression list of a site (the next check reloads it)."""
    _suppressed.pop(site_id, None)
