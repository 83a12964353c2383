"""The rows a plan writes, grouped by partition: events, sessions, feed, links, tallies."""

from __future__ import annotations

import json
import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import orjson
from cassandra.query import BatchStatement, BatchType, PreparedStatement
from django.conf import settings

from sessions_app.aggregates import tally
from sessions_app.core import stamps, timebuckets
from sessions_app.core.batches import by_bytes
from sessions_app.core.cql import bind, consistency, prepare
from sessions_app.core.ids import time_uuid, uuid_time
from sessions_app.core.jsonfmt import dumps
from sessions_app.core.timebuckets import bucket_of
from sessions_app.ingest.plan import EventRow, Plan, version_of
from sessions_app.ledger import policies
from sessions_app.tables import (
    anonymous_links,
    bucket_partials,
    identity_links,
    latest_sessions,
    retention_specs,
    session_events,
    site_events_by_bucket,
    site_sessions,
    user_events_by_bucket,
    user_properties,
    user_sessions,
)


def event_statements(events: Iterable[EventRow]) -> Iterable[tuple[Any, Any]]:
    for rows in _event_groups(events).values():
        yield from _single_partition(rows)


Row = tuple[PreparedStatement, tuple[Any, ...]]


def _event_groups(events: Iterable[EventRow]) -> dict[tuple[Any, ...], list[Row]]:
    """Return the rows of the three event tables, grouped by partition."""
    width = timebuckets.parse_width(settings.USER_EVENTS_BUCKET)
    histories: dict[uuid.UUID, dict[str, list[tuple[datetime, timebuckets.Width]]]] = {}
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    by_session = prepare(session_events.INSERT, idempotent=True, write=True)
    backfill = prepare(session_events.INSERT_BACKFILLED, idempotent=True, write=True)
    by_user = prepare(user_events_by_bucket.INSERT, idempotent=True, write=True)
    by_site = prepare(site_events_by_bucket.INSERT, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.RAW_EVENTS)
    # Taken when the statements are built, just before they are sent: a replayed
    # plan is judged by when it is applied, not when it was planned.
    backfill_before = datetime.now(UTC) - settings.TIMELINE_PREFIX_LAG / 2
    for e in events:
        ts = timebuckets.as_utc(e.ts)
        element, props, context = _json(e.element), _json(e.props), _json(e.context)
        layout = _json(e.layout)
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
            from sessions_app.ledger.widths import user_widths

            widths = histories[e.site_id] = user_widths(e.site_id)
        history = widths.get(e.user_key)
        user_bucket = bucket_of(ts, width, history) if history else timebuckets.floor(ts, width)
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
                    context,
                    layout,
                    ttl,
                ),
            )
        )
        hour = timebuckets.floor(ts, timebuckets.Width.HOUR)
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
                    props,
                    layout,
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
    bound = [bind(statement, params) for statement, params in rows]
    for start in range(0, len(bound), MAX_BATCH_ROWS):
        for run in by_bytes(bound[start : start + MAX_BATCH_ROWS]):
            if len(run) == 1:
                yield run[0], None
                continue
            batch = BatchStatement(
                batch_type=BatchType.UNLOGGED,
                consistency_level=consistency(settings.CASSANDRA_WRITE_CONSISTENCY),
            )
            batch.is_idempotent = True
            for row in run:
                batch.add(row)
            yield batch, None


def feed_sentinel(user_key: str) -> int:
    """Return the latest-sessions partition of a user: a hash, never a time (a sentinel)."""
    return zlib.crc32(user_key.encode()) % settings.FEED_SHARDS


IDENTIFY = "$identify"


def property_rows(plan: Plan) -> Iterable[tuple[tuple[Any, ...], Row]]:
    """The user_properties cells of the traits the plan's identify events set.

    Write timestamps carry the event's time (its TimeUUID's microsecond): the value
    and last_set_at with it, first_set_at with it negated, so the latest and the
    earliest event win in any order of arrival or replay (tables/user_properties.py).
    An event dated ahead of its receipt counts as set at the latest stamp its request
    may bind (core/stamps.py), so an erasure's delete shadows it.
    """
    identifies = [e for e in plan.events if e.name == IDENTIFY and e.props]
    if not identifies:
        return
    set_value = prepare(user_properties.SET_VALUE, idempotent=True, write=True)
    set_first = prepare(user_properties.SET_FIRST, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    # From the receipt, not plan.version: a version may lead its receipt (ingest/versions.py).
    ceiling = stamps.ceiling_us(version_of(plan.received_at))
    for e in identifies:
        micros = timebuckets.epoch_us(uuid_time(e.event_id))
        stamp = min(micros, ceiling)
        ts = timebuckets.as_utc(e.ts)
        key = ("up", e.site_id, e.user_key)
        for name, value in (e.props or {}).items():
            where = (e.site_id, e.user_key, name)
            yield key, (set_value, (stamp, ttl, dumps(value).decode(), ts, *where))
            yield key, (set_first, (-micros, ttl, ts, *where))


def explorer_rows(plan: Plan) -> Iterable[tuple[tuple[Any, ...], Row]]:
    """The site_sessions row of each of the plan's sessions: its summary, filter columns
    and the pages and custom events of this batch added to its sets.

    A session's sets take the paths of its first MAX_PAGES page views and the names of
    custom events among its first MAX_EVENTS events (ordinals from the summary's counts,
    which already include this batch), so a row stays bounded whatever the visit.
    """
    if not plan.sessions:
        return
    upsert = prepare(site_sessions.UPSERT, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS)
    pages: dict[uuid.UUID, list[str]] = defaultdict(list)
    names: dict[uuid.UUID, list[str]] = defaultdict(list)
    for e in plan.events:
        if e.type == "pageview":
            path = tally.page_path(e.url)
            if path:
                pages[e.session_id].append(path)
        names[e.session_id].append(e.name if e.type == "custom" and e.name else "")
    for s in plan.sessions:
        sid = s.session_id
        seen = pages.get(sid, [])
        first_view = s.pageview_count - len(seen)  # page views before this batch
        kept_pages = set(seen[: max(0, site_sessions.MAX_PAGES - first_view)])
        done = names.get(sid, [])
        first_event = s.event_count - len(done)
        kept_names = {n for n in done[: max(0, site_sessions.MAX_EVENTS - first_event)] if n}
        started, last = timebuckets.as_utc(s.started_at), timebuckets.as_utc(s.last_seen_at)
        yield (
            ("ss", *site_sessions.row_key(s.site_id, sid)[:3]),
            (
                upsert,
                (
                    plan.version,
                    ttl,
                    s.user_key,
                    s.user_id is not None,
                    started,
                    last,
                    int((last - started).total_seconds()),
                    s.event_count,
                    s.pageview_count,
                    s.converted,
                    s.is_bot,
                    s.country,
                    s.device,
                    s.browser,
                    s.os,
                    s.source,
                    s.medium,
                    s.campaign,
                    tally.page_path(s.entry_url),
                    tally.page_path(s.exit_url),
                    kept_pages,
                    kept_names,
                    *site_sessions.row_key(s.site_id, sid),
                ),
            ),
        )


def session_rows(plan: Plan) -> Iterable[tuple[tuple[Any, ...], Row]]:
    """The summary and feed rows of a plan's sessions, its identity links and the user
    properties its identify events set, each with its partition key."""
    upsert = prepare(user_sessions.UPSERT, idempotent=True, write=True)
    feed = prepare(latest_sessions.INSERT, idempotent=True, write=True)
    link = prepare(identity_links.INSERT, idempotent=True, write=True)
    reverse = prepare(anonymous_links.INSERT, idempotent=True, write=True)
    yield from property_rows(plan)
    yield from explorer_rows(plan)
    ttl = policies.ttl_seconds(retention_specs.SESSIONS) if plan.sessions else 0
    link_ttl = policies.longest_ttl_seconds(retention_specs.LINKS) if plan.links else 0
    for user, anon in plan.links:
        yield (
            ("l", plan.site_id, user),
            (link, (plan.site_id, user, anon, plan.received_at, link_ttl)),
        )
        yield (
            ("al", plan.site_id, anon),
            (reverse, (plan.site_id, anon, user, plan.received_at, link_ttl)),
        )
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
                    timebuckets.as_utc(s.started_at),
                    timebuckets.as_utc(s.last_seen_at),
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
                    *(getattr(s, name) for name in user_sessions.DIMENSIONS),
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
    insert = prepare(bucket_partials.INSERT, idempotent=True, write=True)
    ttl = policies.ttl_seconds(retention_specs.RAW_EVENTS)
    shard = partial_shard(plan.batch_id, plan.shards)
    by_hour: dict[datetime, list[dict[str, Any]]] = defaultdict(list)
    for e in plan.events:
        by_hour[timebuckets.floor(e.ts, timebuckets.Width.HOUR)].append(e.__dict__)
    starts = {s.session_id: (s.started_at, s.source) for s in plan.sessions}
    for hour, events in by_hour.items():
        counted = tally.tally(events, starts=starts)
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
                    tally.tally_encode(counted),
                    tally.ids_digest(e["event_id"] for e in events),
                    ttl,
                ),
            ),
        )


MAX_BATCH_ROWS = 50


def _json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)


def event_doc(e: EventRow, ts: datetime, element: str | None, props: str | None) -> bytes:
    """The event's JSON as the API serves it in a timeline (session_events.doc).

    The keys and values of EVENT_FIELDS as the columns read back: the
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
            "context": e.context,
            "layout": e.layout,
            "late": e.late,
            "clamped": e.clamped,
            "is_bot": e.is_bot,
        }
    )
