"""The only code that writes event rows to Cassandra.

A `Plan` is everything one accepted batch changes: event rows, session summaries
and identity links. `log_write` stores the plan durably in `transaction_log`
before the collector answers; `plan_apply` writes it into every table and marks
the log entry applied. Applying a plan twice writes the same cells, so the
replay task can re-apply any entry that was not marked.

Statements are prepared and idempotent; rows of one partition go out as one
UNLOGGED batch (a single mutation), and partitions are written concurrently.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from cassandra.query import BatchStatement, BatchType, PreparedStatement
from django.conf import settings

from sessions_app import aggregation, buckets, retention
from sessions_app.cassandra import bind, consistency, pack_by_replicas, prepare, session
from sessions_app.ids import time_uuid
from sessions_app.jsonfmt import dumps

log = logging.getLogger(__name__)

MAX_BATCH_ROWS = 50

# A session's events are read by one query only, the timeline's, which serves each
# event's JSON as the API renders it: `doc`, rendered once here (event_doc). The
# other columns are the row's keys and what erasure and the timeline probe read;
# rows written before `doc` have the event's fields as columns instead
# (selectors.session_tail reads those the old way).
INSERT_SESSION_EVENT = """
INSERT INTO {ks}.session_events (session_id, event_id, site_id, user_key, ts, doc, touched)
VALUES (?, ?, ?, ?, ?, ?, true)
USING TTL ?
"""
# The same for an event older than TIMELINE_PREFIX_LAG / 2 when it is written (late,
# replayed, backfilled): it may sort inside a materialized prefix, so it marks the
# partition (api/timeline.py).
INSERT_SESSION_EVENT_BACKFILLED = INSERT_SESSION_EVENT.replace(
    "doc, touched)", "doc, touched, backfilled)"
).replace("?, true)", "?, true, true)")
INSERT_USER_EVENT = """
INSERT INTO {ks}.user_events_by_bucket
  (site_id, user_key, bucket, event_id, session_id, type, name, ts, url, element, props)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""
INSERT_SITE_EVENT = """
INSERT INTO {ks}.site_events_by_bucket
  (site_id, bucket, shard, event_id, session_id, user_key, type, name, ts, url, element,
   is_bot, late)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""
INSERT_PARTIAL = """
INSERT INTO {ks}.bucket_partials (site_id, bucket, shard, batch_id, events, tally)
VALUES (?, ?, ?, ?, ?, ?)
USING TTL ?
"""
UPSERT_USER_SESSION = """
INSERT INTO {ks}.user_sessions
  (site_id, user_key, session_id, started_at, last_seen_at, anonymous_id, user_id,
   event_count, pageview_count, click_count, entry_url, exit_url, converted, is_bot,
   user_agent, ip_prefix)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
USING TIMESTAMP ? AND TTL ?
"""
INSERT_FEED = """
INSERT INTO {ks}.latest_sessions
  (site_id, sentinel, seen_id, session_id, user_key, started_at, last_seen_at, event_count,
   entry_url, exit_url, is_bot)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_LINK = """
INSERT INTO {ks}.identity_links (site_id, user_id, anonymous_id, linked_at) VALUES (?, ?, ?, ?)
USING TTL ?
"""
INSERT_LOG = """
INSERT INTO {ks}.transaction_log
  (site_id, minute, shard, batch_id, received_at, event_count, payload, applied)
VALUES (?, ?, ?, ?, ?, ?, ?, false)
USING TTL ?
"""
MARK_APPLIED = """
UPDATE {ks}.transaction_log USING TTL ? SET applied = true
WHERE site_id = ? AND minute = ? AND shard = ? AND batch_id = ?
"""
INSERT_FAILED = """
INSERT INTO {ks}.failed_events
  (site_id, day, failed_id, received_at, reason, field, source, payload)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
USING TTL ?
"""
INSERT_STATS = """
INSERT INTO {ks}.ingest_stats
  (site_id, bucket, batch_id, received, accepted, duplicates, late, clamped, rejected)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
LOG_WIDTH = buckets.Width.TEN_MINUTES


@dataclass(frozen=True)
class EventRow:
    """One accepted, sessionized event."""

    site_id: uuid.UUID
    user_key: str
    session_id: uuid.UUID
    event_id: uuid.UUID
    type: str
    ts: datetime
    name: str | None = None
    url: str | None = None
    referrer: str | None = None
    title: str | None = None
    element: dict[str, Any] | None = None
    props: dict[str, Any] | None = None
    late: bool = False
    clamped: bool = False
    is_bot: bool = False
    shard: int = 0


@dataclass
class SessionSummary:
    """The user_sessions row of one session (overwritten whole on every update)."""

    site_id: uuid.UUID
    user_key: str
    session_id: uuid.UUID
    started_at: datetime
    last_seen_at: datetime
    anonymous_id: str | None = None
    user_id: str | None = None
    event_count: int = 0
    pageview_count: int = 0
    click_count: int = 0
    entry_url: str | None = None
    exit_url: str | None = None
    converted: bool = False
    is_bot: bool = False
    user_agent: str | None = None
    ip_prefix: str | None = None


@dataclass
class Plan:
    """Everything one accepted batch writes; `version` orders summary overwrites."""

    site_id: uuid.UUID
    batch_id: uuid.UUID
    received_at: datetime
    version: int  # write timestamp (µs) of summary rows: a replayed old plan never wins
    events: list[EventRow] = field(default_factory=list)
    sessions: list[SessionSummary] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (user_id, anonymous_id)
    # The site's event shards when planned: where the batch's tallies go (partial_shard).
    shards: int = 1


@dataclass(frozen=True)
class Failure:
    """A rejected event (or request) to keep in failed_events."""

    reason: str
    field: str
    payload: str
    source: str


@dataclass(frozen=True)
class Stats:
    """Data-quality counts of one request."""

    received: int
    accepted: int
    duplicates: int
    late: int
    clamped: int
    rejected: dict[str, int]


# --- encoding of plans in the transaction log ------------------------------------


def _ms(value: datetime) -> int:
    return buckets.epoch_ms(buckets.as_utc(value))


def _from_ms(value: int) -> datetime:
    return buckets.EPOCH + timedelta(milliseconds=value)


_EVENT_TIMES = ("ts",)
_SESSION_TIMES = ("started_at", "last_seen_at")
_EVENT_UUIDS = ("site_id", "session_id", "event_id")
_SESSION_UUIDS = ("site_id", "session_id")


def _encode_record(record: Any, times: tuple[str, ...]) -> dict[str, Any]:
    # Straight from the instance's __dict__ (in field order), rather than
    # dataclasses.asdict, which deep-copies every value: this runs for every event on
    # the collector's hot path. None and False are left out (the decoder's defaults);
    # orjson writes UUIDs as str() does.
    data = {k: v for k, v in record.__dict__.items() if v is not None and v is not False}
    for name in times:
        data[name] = _ms(data[name])
    return data


def _decode_record(
    cls: type, data: dict[str, Any], times: tuple[str, ...], uuids: tuple[str, ...], memo: dict
) -> Any:
    for key in times:
        data[key] = _from_ms(data[key])
    for key in uuids:
        text = data[key]
        value = memo.get(text)  # a plan's events share their site and session ids
        if value is None:
            value = memo[text] = uuid.UUID(text)
        data[key] = value
    return cls(**data)


def plan_encode(plan: Plan) -> bytes:
    """Serialize a plan for the transaction log (JSON, zlib-compressed).

    Format "v": 1 — records as JSON objects without their None/False fields, times
    in epoch milliseconds, UUIDs as strings (tests/collector/test_plan_codec.py holds
    a payload of the first encoder, which the decoder must keep reading; "shards"
    came later and reads as 1 when absent).
    """
    body = {
        "v": 1,
        "site_id": plan.site_id,
        "batch_id": plan.batch_id,
        "received_at": _ms(plan.received_at),
        "version": plan.version,
        "events": [_encode_record(e, _EVENT_TIMES) for e in plan.events],
        "sessions": [_encode_record(s, _SESSION_TIMES) for s in plan.sessions],
        "links": plan.links,
        "shards": plan.shards,
    }
    return zlib.compress(orjson.dumps(body), 1)


def plan_decode(payload: bytes) -> Plan:
    """Rebuild a plan from its transaction-log payload."""
    body = orjson.loads(zlib.decompress(payload))
    memo: dict[str, uuid.UUID] = {}
    return Plan(
        site_id=uuid.UUID(body["site_id"]),
        batch_id=uuid.UUID(body["batch_id"]),
        received_at=_from_ms(body["received_at"]),
        version=body["version"],
        events=[
            _decode_record(EventRow, e, _EVENT_TIMES, _EVENT_UUIDS, memo) for e in body["events"]
        ],
        sessions=[
            _decode_record(SessionSummary, s, _SESSION_TIMES, _SESSION_UUIDS, memo)
            for s in body["sessions"]
        ],
        links=[(u, a) for u, a in body["links"]],
        shards=body.get("shards", 1),  # absent from plans logged before the tallies
    )


# --- writing ---------------------------------------------------------------------


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)


def event_doc(e: EventRow, ts: datetime, element: str | None, props: str | None) -> bytes:
    """The event's JSON as the API serves it in a timeline (session_events.doc).

    The keys and values of selectors.EVENT_FIELDS as the columns read back: the
    time floored to the millisecond a Cassandra timestamp keeps, element and props
    the JSON text the other tables store (_json), embedded as it is.
    """
    return dumps(
        {
            "event_id": e.event_id,
            "site_id": e.site_id,
            "user_key": e.user_key,
            "type": e.type,
            "name": e.name,
            "ts": ts.replace(microsecond=ts.microsecond - ts.microsecond % 1000),
            "url": e.url,
            "referrer": e.referrer,
            "title": e.title,
            "element": None if element is None else orjson.Fragment(element),
            "props": None if props is None else orjson.Fragment(props),
            "late": e.late,
            "clamped": e.clamped,
            "is_bot": e.is_bot,
        }
    )


# Every write binds through cassandra.bind, which binds a missing value (None, or an
# empty map) as UNSET: a bound null writes a tombstone. These rows are inserted
# whole and never updated column by column, so an unset column and a null one read
# the same; tombstones would only slow reads and compaction (a 1,000-event
# timeline otherwise scans thousands of them).


def log_key(plan: Plan) -> tuple[uuid.UUID, datetime, int, uuid.UUID]:
    """Return the primary key of a plan's transaction_log row."""
    shard = plan.batch_id.int % settings.TXLOG_SHARDS
    return plan.site_id, buckets.floor(plan.received_at, LOG_WIDTH), shard, plan.batch_id


def _mark_params(plan: Plan) -> tuple[Any, ...]:
    # The mark carries the log's TTL too: an UPDATE cell without one would get the
    # table's backstop and outlive the rest of its row.
    return (retention.ttl_seconds(retention.TRANSACTION_LOG), *log_key(plan))


def log_write(
    plan: Plan | None,
    *,
    site_id: uuid.UUID,
    batch_id: uuid.UUID,
    received_at: datetime,
    failures: Sequence[Failure],
    stats: Stats,
) -> bytes | None:
    """Durably store the plan, the failed events and the request's counts (before the 200).

    Returns the plan's log payload (what the applier queue carries), if it had events.
    """
    work: list[tuple[Any, Any]] = []
    payload = None
    if plan is not None and plan.events:
        key = log_key(plan)
        payload = plan_encode(plan)
        work.append(
            (
                prepare(INSERT_LOG, idempotent=True, write=True),
                (
                    *key,
                    plan.received_at,
                    len(plan.events),
                    payload,
                    retention.ttl_seconds(retention.TRANSACTION_LOG),
                ),
            )
        )
    day = buckets.floor(received_at, buckets.Width.DAY)
    failed = prepare(INSERT_FAILED, idempotent=True, write=True)
    failed_ttl = retention.ttl_seconds(retention.FAILED_EVENTS) if failures else 0
    for index, failure in enumerate(failures):
        work.append(
            (
                failed,
                (
                    site_id,
                    day,
                    time_uuid(received_at, f"{batch_id}:{index}"),
                    received_at,
                    failure.reason,
                    failure.field,
                    failure.source,
                    failure.payload[: settings.FAILED_EVENT_PAYLOAD_BYTES] or None,
                    failed_ttl,
                ),
            )
        )
    work.append(
        (
            prepare(INSERT_STATS, idempotent=True, write=True),
            (
                site_id,
                buckets.floor(received_at, buckets.Width.HOUR),
                batch_id,
                stats.received,
                stats.accepted,
                stats.duplicates,
                stats.late,
                stats.clamped,
                stats.rejected,
            ),
        )
    )
    # The log entry, the counts and any failed events are separate partitions; where
    # they share their replicas (always, on one node or with RF = nodes) they go as
    # one unlogged batch: one request to wait for instead of two or more.
    _run(pack_by_replicas([bind(statement, params)] for statement, params in work))
    return payload


def plan_apply(plan: Plan, *, wait_for_mark: bool = True) -> int:
    """Write a plan into every table, then mark its log entry applied; return statements.

    The collector does not wait for the mark (`wait_for_mark=False`): a mark that
    never lands only makes the replay task apply the plan again, which writes the
    same cells.
    """
    work = list(_event_statements(plan.events))
    work.extend(row for _, row in _session_rows(plan))
    work.extend(row for _, row in partial_rows(plan))
    _run(work)
    if plan.events:
        mark = prepare(MARK_APPLIED, idempotent=True, write=True)
        params = _mark_params(plan)
        if wait_for_mark:
            session().execute(mark, params)
        else:
            session().execute_async(mark, params).add_errback(
                lambda exc: log.warning(
                    "applied mark of batch %s not written: %s", plan.batch_id, exc
                )
            )
    return len(work)


APPLY_PARTITIONS_PER_BATCH = 10
APPLY_ROWS_PER_BATCH = 100


def plans_apply(plans: Sequence[Plan]) -> int:
    """Write several plans at once (the applier), then mark each applied; return statements.

    The same cells as `plan_apply` of each plan in turn: rows of one partition from
    every plan go together, and partitions that share their replicas are packed
    into unlogged batches (`cassandra.pack_by_replicas`), so twenty beacons cost a
    few requests instead of a hundred and sixty. Summaries keep their plan's write
    timestamp, so the newest plan's summary wins whatever the order. The marks go
    only once every row is written; on a failure nothing is marked, and the
    replay task applies those plans again.
    """
    partitions: dict[tuple[Any, ...], list[Row]] = _event_groups(
        e for plan in plans for e in plan.events
    )
    for plan in plans:
        for key, row in _session_rows(plan):
            partitions.setdefault(key, []).append(row)
        for key, row in partial_rows(plan):
            partitions.setdefault(key, []).append(row)
    work = pack_by_replicas(
        (
            [bind(statement, params) for statement, params in rows[start : start + MAX_BATCH_ROWS]]
            for rows in partitions.values()
            for start in range(0, len(rows), MAX_BATCH_ROWS)
        ),
        partitions_per_batch=APPLY_PARTITIONS_PER_BATCH,
        rows_per_batch=APPLY_ROWS_PER_BATCH,
    )
    _run(work)
    mark = prepare(MARK_APPLIED, idempotent=True, write=True)
    marks: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for plan in plans:
        if plan.events:
            marks[log_key(plan)[:3]].append(bind(mark, _mark_params(plan)))
    marked = pack_by_replicas(
        marks.values(),
        partitions_per_batch=APPLY_PARTITIONS_PER_BATCH,
        rows_per_batch=APPLY_ROWS_PER_BATCH,
    )
    _run(marked)
    return len(work) + len(marked)


def log_mark_applied(plan: Plan) -> None:
    """Mark a plan's transaction-log entry applied (when nothing of it is left to apply)."""
    session().execute(prepare(MARK_APPLIED, idempotent=True, write=True), _mark_params(plan))


def plan_without(plan: Plan, keys: frozenset[str] | set[str]) -> Plan:
    """Return the plan without the events, sessions and identity links of these user keys.

    A session goes if its user key, anonymous id or user id is one of them; its
    events go with it.
    """
    sessions = [
        s
        for s in plan.sessions
        if s.user_key not in keys
        and (s.anonymous_id or "") not in keys
        and (s.user_id or "") not in keys
    ]
    dropped = {s.session_id for s in plan.sessions} - {s.session_id for s in sessions}
    return replace(
        plan,
        events=[e for e in plan.events if e.user_key not in keys and e.session_id not in dropped],
        sessions=sessions,
        links=[(u, a) for u, a in plan.links if u not in keys and a not in keys],
    )


def _event_statements(events: Iterable[EventRow]) -> Iterable[tuple[Any, Any]]:
    for rows in _event_groups(events).values():
        yield from _single_partition(rows)


Row = tuple[PreparedStatement, tuple[Any, ...]]


def _event_groups(events: Iterable[EventRow]) -> dict[tuple[Any, ...], list[Row]]:
    """Return the rows of the three event tables, grouped by partition."""
    width = buckets.parse_width(settings.USER_EVENTS_BUCKET)
    histories: dict[uuid.UUID, dict[str, list[tuple[datetime, buckets.Width]]]] = {}
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    by_session = prepare(INSERT_SESSION_EVENT, idempotent=True, write=True)
    backfill = prepare(INSERT_SESSION_EVENT_BACKFILLED, idempotent=True, write=True)
    by_user = prepare(INSERT_USER_EVENT, idempotent=True, write=True)
    by_site = prepare(INSERT_SITE_EVENT, idempotent=True, write=True)
    ttl = retention.ttl_seconds(retention.RAW_EVENTS)
    # Taken when the statements are built, just before they are sent: a replayed
    # plan is judged by when it is applied, not when it was planned.
    backfill_before = datetime.now(UTC) - settings.TIMELINE_PREFIX_LAG / 2
    for e in events:
        ts = buckets.as_utc(e.ts)
        element, props = _json(e.element), _json(e.props)
        groups[("s", e.session_id)].append(
            (
                backfill if ts < backfill_before else by_session,
                (
                    e.session_id,
                    e.event_id,
                    e.site_id,
                    e.user_key,
                    ts,
                    event_doc(e, ts, element, props),
                    ttl,
                ),
            )
        )
        widths = histories.get(e.site_id)
        if widths is None:  # one cached lookup per site and call
            from sessions_app.selectors import user_widths

            widths = histories[e.site_id] = user_widths(e.site_id)
        history = widths.get(e.user_key)
        user_bucket = buckets.bucket_of(ts, width, history) if history else buckets.floor(ts, width)
        groups[("u", e.site_id, e.user_key, user_bucket)].append(
            (
                by_user,
                (
                    e.site_id,
                    e.user_key,
                    user_bucket,
                    e.event_id,
                    e.session_id,
                    e.type,
                    e.name,
                    ts,
                    e.url,
                    element,
                    props,
                    ttl,
                ),
            )
        )
        hour = buckets.floor(ts, buckets.Width.HOUR)
        groups[("t", e.site_id, hour, e.shard)].append(
            (
                by_site,
                (
                    e.site_id,
                    hour,
                    e.shard,
                    e.event_id,
                    e.session_id,
                    e.user_key,
                    e.type,
                    e.name,
                    ts,
                    e.url,
                    element,
                    e.is_bot,
                    e.late,
                    ttl,
                ),
            )
        )
    return groups


def _single_partition(
    rows: list[tuple[PreparedStatement, tuple[Any, ...]]],
) -> Iterable[tuple[Any, Any]]:
    if len(rows) == 1:
        yield rows[0]  # _run binds it
        return
    for start in range(0, len(rows), MAX_BATCH_ROWS):
        batch = BatchStatement(
            batch_type=BatchType.UNLOGGED,
            consistency_level=consistency(settings.CASSANDRA_WRITE_CONSISTENCY),
        )
        batch.is_idempotent = True
        for statement, params in rows[start : start + MAX_BATCH_ROWS]:
            batch.add(bind(statement, params))
        yield batch, None


def feed_sentinel(user_key: str) -> int:
    """Return the latest-sessions partition of a user: a hash, never a time (seed 000)."""
    return zlib.crc32(user_key.encode()) % settings.FEED_SHARDS


def _session_rows(plan: Plan) -> Iterable[tuple[tuple[Any, ...], Row]]:
    """The summary and feed rows of a plan's sessions and its identity links, each with
    its partition key."""
    upsert = prepare(UPSERT_USER_SESSION, idempotent=True, write=True)
    feed = prepare(INSERT_FEED, idempotent=True, write=True)
    link = prepare(INSERT_LINK, idempotent=True, write=True)
    ttl = retention.ttl_seconds(retention.SESSIONS) if plan.sessions or plan.links else 0
    for user, anon in plan.links:
        yield ("l", plan.site_id, user), (link, (plan.site_id, user, anon, plan.received_at, ttl))
    for s in plan.sessions:
        sentinel = feed_sentinel(s.user_key)
        yield (
            ("us", s.site_id, s.user_key),
            (
                upsert,
                (
                    s.site_id,
                    s.user_key,
                    s.session_id,
                    buckets.as_utc(s.started_at),
                    buckets.as_utc(s.last_seen_at),
                    s.anonymous_id,
                    s.user_id,
                    s.event_count,
                    s.pageview_count,
                    s.click_count,
                    s.entry_url,
                    s.exit_url,
                    s.converted,
                    s.is_bot,
                    s.user_agent,
                    s.ip_prefix,
                    plan.version,
                    ttl,
                ),
            ),
        )
        yield (
            ("f", s.site_id, sentinel),
            (
                feed,
                (
                    s.site_id,
                    sentinel,
                    time_uuid(s.last_seen_at, str(s.session_id)),
                    s.session_id,
                    s.user_key,
                    s.started_at,
                    s.last_seen_at,
                    s.event_count,
                    s.entry_url,
                    s.exit_url,
                    s.is_bot,
                ),
            ),
        )


def partial_shard(batch_id: uuid.UUID, shards: int) -> int:
    """Return the bucket_partials shard of a batch's tallies (the same for every hour)."""
    return zlib.crc32(batch_id.bytes) % max(1, shards)


def partial_rows(plan: Plan) -> Iterable[tuple[tuple[Any, ...], Row]]:
    """One bucket_partials row per hour the plan's events fall in: their tally.

    Keyed by the batch id, so a replayed plan overwrites its own tallies; the shard
    comes from the batch id and the plan's shard count, never from which events
    are left after an erasure filtered the plan.
    """
    if not plan.events:
        return
    insert = prepare(INSERT_PARTIAL, idempotent=True, write=True)
    ttl = retention.ttl_seconds(retention.RAW_EVENTS)
    shard = partial_shard(plan.batch_id, plan.shards)
    by_hour: dict[datetime, list[dict[str, Any]]] = defaultdict(list)
    for e in plan.events:
        by_hour[buckets.floor(e.ts, buckets.Width.HOUR)].append(e.__dict__)
    for hour, events in by_hour.items():
        counted = aggregation.tally(events)
        yield (
            ("p", plan.site_id, hour, shard),
            (
                insert,
                (
                    plan.site_id,
                    hour,
                    shard,
                    plan.batch_id,
                    counted.rows,
                    aggregation.tally_encode(counted),
                    ttl,
                ),
            ),
        )


def _run(work: list[tuple[Any, Any]]) -> None:
    """Send every statement at once, wait for all, raise the first failure.

    A batch is a handful of partitions, so plain execute_async beats
    execute_concurrent's windowing machinery here; the responses count down a
    latch on the driver's thread, so this thread wakes once, not once per future.
    """
    current = session()
    futures = [
        current.execute_async(statement if params is None else bind(statement, params))
        for statement, params in work
    ]
    _wait_all(futures)


def _wait_all(futures: list[Any]) -> None:
    remaining = [len(futures)]
    lock, done = threading.Lock(), threading.Event()

    def arrived(_: Any) -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0] == 0:
                done.set()

    for future in futures:
        future.add_callbacks(arrived, arrived)
    done.wait(timeout=settings.CASSANDRA_REQUEST_TIMEOUT * 2 + 1)
    for future in futures:
        future.result()  # raises the first failure (or a timeout if still pending)


def version_of(received_at: datetime) -> int:
    """Return the write timestamp (µs since the epoch) that orders plans by arrival."""
    delta = buckets.as_utc(received_at) - buckets.EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
